/// Rich against plain on one metric, as shown, with the device as the unit: a device whose
/// notifications showed both ways is in both groups, and the covariance of its two rates enters
/// the variance (`ClusteredProportionComparison`), so the groups are not taken as independent.
/// Observational: presentation is not randomized.
public struct ExperimentClusteredComparison: Sendable, Equatable {
    public var metric: ExperimentMetric
    /// Devices with trials of the metric on both sides.
    public var sharedDevices: Int
    /// `p_rich - p_plain`, Wald with the cluster-robust variance; nil with `unavailable`.
    public var difference: ClusteredEffect?
    /// `p_rich / p_plain` on the log scale; nil with `unavailable`, also when the difference
    /// stands (a side without successes has a difference but no log ratio).
    public var ratio: ClusteredEffect?
    /// Why an effect is missing (`StatisticsError.Code`), nil when both are present: the
    /// difference's reason when neither is, else the ratio's.
    public var unavailable: String?

    init(metric: ExperimentMetric, rich: ExperimentArmTally, plain: ExperimentArmTally, confidence: Double) {
        self.metric = metric
        let shared = rich.sharedDevices(with: plain, metric)
        sharedDevices = shared.devices
        let comparison = ClusteredProportionComparison(variant: rich.deviceMoments(metric), control: plain.deviceMoments(metric),
                                                       sharedDevices: shared.devices > 0 ? shared.moments : nil)
        do {
            difference = try comparison.difference(confidence: confidence)
            ratio = try comparison.ratio(confidence: confidence)
        } catch {
            unavailable = error.code.rawValue
        }
    }
}
