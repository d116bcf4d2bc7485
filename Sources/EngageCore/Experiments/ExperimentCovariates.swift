/// CUPED's covariates: each device's successes and trials of every metric in the window before
/// the experiment started, read from the log by the runner. A device of an arm that is not here
/// had no notification in the window: it stays in the analysis with covariate 0, as gbstats keeps
/// units without pre-period data.
public struct ExperimentCovariates: Sendable, Equatable {
    /// The window `[from, to)`: `to` is the experiment's `startAt`.
    public let from: Timestamp
    public let to: Timestamp
    public let days: Int
    private var perDevice: [String: MetricTrials] = [:]

    public init(days: Int, before start: Timestamp) {
        self.days = days
        to = start
        from = Timestamp(microsecondsSinceEpoch: start.microsecondsSinceEpoch - Int64(days) * 86_400_000_000)
    }

    /// Devices with at least one notification in the window.
    public var devices: Int { perDevice.count }

    /// Adds `count` notifications of `device` that reached `stages` (within their denominators,
    /// as the experiment counts them).
    public mutating func add(device: String, reached stages: FunnelStageSet, count: Int = 1) {
        let one = MetricTrials(reached: stages.withinDenominators)
        // One hash lookup: the device's sums are updated in place.
        Self.accumulate(&perDevice[device, default: MetricTrials()],
                        MetricTrials(successes: one.successes &* count, trials: one.trials &* count))
    }

    private static func accumulate(_ stored: inout MetricTrials, _ added: MetricTrials) {
        stored = stored + added
    }

    /// The device's pre-period successes and trials of `metric`; 0 and 0 without history.
    public func trials(device: String, _ metric: ExperimentMetric) -> (successes: Int, trials: Int) {
        guard let trials = perDevice[device] else { return (0, 0) }
        return (trials.successes[metric], trials.trials[metric])
    }
}
