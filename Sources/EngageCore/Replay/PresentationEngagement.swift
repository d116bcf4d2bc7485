/// Engagement of displayed notifications per category, rich and plain apart, from which the replay
/// predicts the engagement of a strategy that shows a different share of them rich.
///
/// Two sets are kept: notifications carrying an experiment tag (their strategy was assigned at
/// random, so rich and plain displays are spread over all kinds of devices), and all of them. A
/// prediction uses the randomized rates of a category when they have both presentations, else
/// the rates of all its notifications, which devices on slow networks (more often plain) bias;
/// `PredictedEngagement` says which categories fell back.
public struct PresentationEngagement: Sendable, Equatable {
    /// Rich and plain counts of one category.
    public struct Cell: Sendable, Equatable {
        public var rich = FunnelCounts()
        public var plain = FunnelCounts()

        public init() {}

        public subscript(_ presentation: Presentation) -> FunnelCounts {
            presentation == .rich ? rich : plain
        }

        mutating func add(_ counts: FunnelCounts, _ presentation: Presentation) {
            if presentation == .rich { rich = rich + counts } else { plain = plain + counts }
        }
    }

    public private(set) var randomized: [String: Cell] = [:]
    public private(set) var all: [String: Cell] = [:]

    public init() {}

    /// Adds one displayed notification.
    public mutating func add(category: String, presentation: Presentation, counts: FunnelCounts,
                             isRandomized: Bool) {
        all[category, default: Cell()].add(counts, presentation)
        if isRandomized { randomized[category, default: Cell()].add(counts, presentation) }
    }

    /// The counts a prediction for `category` uses: randomized when it has the presentations a
    /// prediction needs, else all; nil when neither has them.
    func cell(for category: String, needsRich: Bool, needsPlain: Bool) -> (cell: Cell, isRandomized: Bool)? {
        func usable(_ cell: Cell?) -> Bool {
            guard let cell else { return false }
            return (!needsRich || cell.rich[.displayed] > 0) && (!needsPlain || cell.plain[.displayed] > 0)
        }
        if usable(randomized[category]) { return (randomized[category]!, true) }
        if usable(all[category]) { return (all[category]!, false) }
        return nil
    }
}

/// Rich displays per category under some strategy: `rich` of `deliveries`.
public struct RichShare: Sendable, Equatable {
    public var deliveries = 0
    public var rich = 0

    public init(deliveries: Int = 0, rich: Int = 0) {
        self.deliveries = deliveries
        self.rich = rich
    }

    public var share: Double? { deliveries == 0 ? nil : Double(rich) / Double(deliveries) }
}

/// A model-based estimate of an engagement rate under a strategy:
/// `sum over categories of w_c (s_c r_c,rich + (1 - s_c) r_c,plain)`, with `w_c` the category's
/// share of the deliveries, `s_c` the strategy's predicted rich share in it and `r` the measured
/// rates per displayed notification.
///
/// The interval treats the rich shares as known (they are the model's output, not a sample) and
/// the rates as independent binomial proportions, `Var = sum w_c^2 (s_c^2 r(1-r)/n_rich +
/// (1-s_c)^2 r(1-r)/n_plain)`; it ignores that one device's notifications are correlated, so it
/// is somewhat too narrow, and it cannot include the error of the pipeline model itself.
public struct PredictedEngagement: Sendable, Equatable {
    public var metric: ExperimentMetric
    /// Nil when no category had the rates it needed.
    public var rate: Double?
    public var interval: ConfidenceInterval?
    /// Deliveries of categories with rates.
    public var deliveries: Int
    /// Deliveries of categories without the rates they needed, left out of the estimate.
    public var excludedDeliveries: Int
    /// Categories whose rates came from all notifications because randomized ones lacked a presentation.
    public var observationalCategories: [String]

    /// The estimate for rich shares `shares` (per category) with rates from `engagement`.
    public static func estimate(_ metric: ExperimentMetric, shares: [String: RichShare],
                                engagement: PresentationEngagement, confidence: Double) -> PredictedEngagement {
        var parts: [(deliveries: Double, mean: Double, variance: Double)] = []
        var excluded = 0
        var observational: [String] = []
        for category in shares.keys.sorted() {
            let share = shares[category]!
            guard let s = share.share else { continue }
            guard let (cell, isRandomized) = engagement.cell(for: category, needsRich: s > 0, needsPlain: s < 1) else {
                excluded += share.deliveries
                continue
            }
            if !isRandomized { observational.append(category) }
            func rate(_ counts: FunnelCounts) -> (mean: Double, variance: Double) {
                let n = counts.trials(metric)
                guard n > 0 else { return (0, 0) }
                let r = Double(counts.successes(metric)) / Double(n)
                return (r, r * (1 - r) / Double(n))
            }
            let rich = rate(cell.rich)
            let plain = rate(cell.plain)
            parts.append((Double(share.deliveries), s * rich.mean + (1 - s) * plain.mean,
                          s * s * rich.variance + (1 - s) * (1 - s) * plain.variance))
        }
        let total = parts.reduce(0) { $0 + $1.deliveries }
        guard total > 0 else {
            return PredictedEngagement(metric: metric, rate: nil, interval: nil, deliveries: 0,
                                       excludedDeliveries: excluded, observationalCategories: observational)
        }
        var mean = 0.0
        var variance = 0.0
        for part in parts {
            let w = part.deliveries / total
            mean += w * part.mean
            variance += w * w * part.variance
        }
        return PredictedEngagement(metric: metric, rate: mean,
                                   interval: NormalInterval.around(mean, variance: variance, confidence: confidence),
                                   deliveries: Int(total), excludedDeliveries: excluded,
                                   observationalCategories: observational)
    }
}

/// `estimate +- z sqrt(variance)`, clamped to [0, 1] as rates are (to [0, upperBound] for an
/// estimator that can pass 1).
enum NormalInterval {
    static func around(_ estimate: Double, variance: Double, confidence: Double, upperBound: Double = 1) -> ConfidenceInterval {
        let half = twoSidedCriticalValue(confidence: confidence) * max(0, variance).squareRoot()
        return ConfidenceInterval(lower: max(0, estimate - half), upper: min(upperBound, estimate + half))
    }
}
