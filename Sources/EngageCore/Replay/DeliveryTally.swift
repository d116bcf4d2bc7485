/// Deliveries summed up: how many were shown rich, how long the extension took to hand over the
/// content, how many bytes it downloaded, and the outcomes and reasons of failure.
///
/// Hand-off times are counted per whole millisecond up to `maximumMS` (later ones in the last
/// slot), so percentiles are exact at millisecond resolution in constant memory.
public struct DeliveryTally: Sendable, Equatable {
    public private(set) var deliveries = 0
    public private(set) var rich = 0
    /// Bytes received over the network, held at Int.max; nil for recorded deliveries (devices
    /// report the size of the variant, not how much of it arrived).
    public var bytesTransferred: Int? { exactBytes.map { Int(clamping: $0) } }
    /// The exact sum, in 128 bits: variants of up to 2^53 bytes pass Int64 within a thousand
    /// deliveries, and the mean per delivery must be of the sum, not of a total held at Int.max.
    private var exactBytes: Int128?
    /// Deliveries whose media came from the cache.
    public private(set) var cacheReads = 0
    public private(set) var outcomes: [DeliveryOutcome: Int] = [:]
    /// Only for modelled deliveries: recorded ones report an outcome, not its cause.
    public private(set) var failures: [PipelineFailure: Int] = [:]
    private var handoffCounts: [Int]

    /// A tally of hand-off times up to `maximumMS` (the time budget: the model never hands over later).
    public init(maximumMS: Int, countsBytes: Bool) {
        precondition(maximumMS >= 0, "the largest hand-off time must not be negative")
        handoffCounts = [Int](repeating: 0, count: maximumMS + 1)
        exactBytes = countsBytes ? 0 : nil
    }

    /// Adds one delivery the model predicted.
    public mutating func record(_ outcome: PipelineOutcome) {
        add(outcome: outcome.outcome, handoffMS: outcome.handoffMS, fromCache: outcome.source == .cache)
        if let bytes = exactBytes { exactBytes = bytes + Int128(outcome.bytesTransferred) }
        if let failure = outcome.failure { failures[failure, default: 0] += 1 }
    }

    /// Adds one delivery a device recorded.
    public mutating func record(_ delivered: DeliveredDetails) {
        add(outcome: delivered.outcome, handoffMS: delivered.processingMS,
            fromCache: delivered.attachment.source == .cache)
    }

    private mutating func add(outcome: DeliveryOutcome, handoffMS: Int, fromCache: Bool) {
        deliveries += 1
        if outcome == .attached { rich += 1 }
        if fromCache { cacheReads += 1 }
        outcomes[outcome, default: 0] += 1
        handoffCounts[min(max(handoffMS, 0), handoffCounts.count - 1)] += 1
    }

    /// Rich displays per delivery; nil without deliveries.
    public var richRate: Double? {
        deliveries == 0 ? nil : Double(rich) / Double(deliveries)
    }

    /// Mean bytes per delivery; nil without deliveries or when bytes are not counted.
    public var bytesPerDelivery: Double? {
        guard let exactBytes, deliveries > 0 else { return nil }
        return Double(exactBytes) / Double(deliveries)
    }

    /// The nearest-rank `q`-quantile of the hand-off times in milliseconds (the smallest time
    /// with at least `q` of the deliveries at or below it); nil without deliveries.
    public func handoffQuantile(_ q: Double) -> Int? {
        precondition(q > 0 && q <= 1, "quantile must lie in (0, 1]")
        guard deliveries > 0 else { return nil }
        let rank = max(1, Int((q * Double(deliveries)).rounded(.up)))
        var cumulative = 0
        for (milliseconds, count) in handoffCounts.enumerated() {
            cumulative += count
            if cumulative >= rank { return milliseconds }
        }
        return handoffCounts.count - 1
    }

    /// p50, p90 and p99 of the hand-off times.
    public var handoffPercentiles: (p50: Int, p90: Int, p99: Int)? {
        guard let p50 = handoffQuantile(0.5), let p90 = handoffQuantile(0.9), let p99 = handoffQuantile(0.99)
        else { return nil }
        return (p50, p90, p99)
    }
}
