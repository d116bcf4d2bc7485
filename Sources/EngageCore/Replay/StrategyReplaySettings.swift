/// What a strategy replay counts and how it models devices.
public struct StrategyReplaySettings: Sendable, Equatable {
    /// The extension's limits, cache TTL included.
    public var limits: PipelineLimits
    /// The latest deliveries of a device its network is estimated from (see `ReplayNetworkHistory`).
    public var historyLimit: Int
    /// Notifications sent before this are not counted; their deliveries still inform the
    /// devices' network estimates and caches (a warm-up). Nil counts everything.
    public var countFrom: Timestamp?
    /// Only these categories are counted (all inform the devices' histories); empty for all.
    public var categories: Set<String>
    /// Of every interval.
    public var confidence: Double

    public init(limits: PipelineLimits = PipelineLimits(), historyLimit: Int = 64, countFrom: Timestamp? = nil,
                categories: Set<String> = [], confidence: Double = 0.95) {
        precondition(historyLimit > 0, "the history must hold at least one delivery")
        precondition(confidence > 0 && confidence < 1, "confidence must lie in (0, 1)")
        self.limits = limits
        self.historyLimit = historyLimit
        self.countFrom = countFrom
        self.categories = categories
        self.confidence = confidence
    }

    /// How far before `countFrom` a reader should start so that devices' histories and caches are
    /// warm: the cache TTL, at least one day.
    public var warmUpMicroseconds: Int64 {
        Int64(max(limits.cacheTTLSeconds, 86_400)) * Timestamp.microsecondsPerSecond
    }

    /// Whether a notification of `category` first seen (sent) at `time` is counted.
    public func counts(category: String, at time: Timestamp) -> Bool {
        if let countFrom, time < countFrom { return false }
        return categories.isEmpty || categories.contains(category)
    }
}
