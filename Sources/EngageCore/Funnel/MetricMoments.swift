/// Sums over the devices of a group (an experiment arm) of each device's `x^2`, `n^2` and `x n`,
/// with `x` its successes and `n` its trials of a metric, for every metric at once (lane
/// `EngagementMetric.lane`). With the group's counts, which give `sum x` and `sum n`, they are
/// what a delta-method variance with the device as the unit needs.
///
/// The sums are updated as one device's counts change (`update(from:to:isNewDevice:)`), so an
/// analysis never revisits devices; they are integers, so the updates are exact in any order.
public struct MetricMoments: Sendable, Hashable {
    /// Devices counted, whatever their trials.
    public private(set) var devices = 0
    /// `sum x^2`.
    public private(set) var successesSquared = MetricLanes()
    /// `sum n^2`.
    public private(set) var trialsSquared = MetricLanes()
    /// `sum x n`.
    public private(set) var successesTimesTrials = MetricLanes()

    public init() {}

    /// A device's counts went from `old` to `new` (`isNewDevice`: it was not counted before).
    /// Inlined: called for every notification an analysis reads, on values held in registers.
    @inline(__always)
    public mutating func update(from old: MetricTrials, to new: MetricTrials, isNewDevice: Bool) {
        if isNewDevice { devices += 1 }
        let x0 = old.successes, n0 = old.trials
        let x1 = new.successes, n1 = new.trials
        successesSquared &+= x1 &* x1 &- x0 &* x0
        trialsSquared &+= n1 &* n1 &- n0 &* n0
        successesTimesTrials &+= x1 &* n1 &- x0 &* n0
    }
}
