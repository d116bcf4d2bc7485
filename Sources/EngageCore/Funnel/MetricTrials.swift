/// The successes and trials of every metric for one unit (a notification, a device): lane by
/// lane, `successes` counts the metric's numerator and `trials` its denominator.
public struct MetricTrials: Sendable, Hashable {
    public var successes = MetricLanes()
    public var trials = MetricLanes()

    public init() {}

    public init(successes: MetricLanes, trials: MetricLanes) {
        self.successes = successes
        self.trials = trials
    }

    /// One notification that reached `stages`: 1 or 0 per lane.
    public init(reached stages: FunnelStageSet) {
        self = Self.byStages[Int(stages.bits)]
    }

    public static func + (a: MetricTrials, b: MetricTrials) -> MetricTrials {
        MetricTrials(successes: a.successes &+ b.successes, trials: a.trials &+ b.trials)
    }

    /// The trials of every set of stages, by its bits (see `FunnelCounts.byStages`).
    private static let byStages: [MetricTrials] = (0..<FunnelStageSet.combinations).map {
        FunnelCounts(reached: FunnelStageSet(bits: UInt16($0))).metricTrials
    }
}
