/// One arm's notifications, kept per device because the device is the unit of randomization.
///
/// A metric is a ratio of per-device sums, `R = sum x_d / sum n_d` (successes over trials), whose
/// variance comes from the delta method over devices, as GrowthBook analyses ratio metrics:
///
///     Var R = (s_x^2 - 2 R s_xn + R^2 s_n^2) / (D mu_n^2)
///
/// over the `D` devices. The analysis reads the device-level sums (`ratioMoments`) and computes it
/// with sample moments (divisor `D - 1`), as gbstats' `RatioStatistic` (`ArmEstimate`); `summary`
/// keeps the population moments of `Lift`. Notifications of one device are correlated
/// (some people open everything); treating them as independent would make intervals too narrow.
/// With one notification per device this is exactly the binomial `p (1 - p) / n`.
/// The moments are updated as each device's counts change, so analysis does not revisit devices.
public struct ExperimentArmTally: Sendable, Equatable {
    /// Sums over all the arm's notifications.
    public private(set) var totals = FunnelCounts()
    /// `processing_ms` of the delivered notifications.
    public private(set) var processingMS = LatencyHistogram()
    /// Sums over devices of the squares and products of every metric's successes and trials.
    public private(set) var moments = MetricMoments()
    /// Each device's successes and trials of every metric.
    private var perDevice: [String: MetricTrials] = [:]

    public init() {}

    /// Distinct devices with at least one notification.
    public var devices: Int { perDevice.count }

    /// Adds one notification (each notification once: tallies are rebuilt for every analysis).
    public mutating func add(_ observation: ExperimentObservation) {
        totals = totals + observation.counts
        record(device: observation.deviceID, MetricTrials(reached: observation.stages))
        if let processing = observation.processingMS { processingMS.record(Double(processing)) }
    }

    /// A tally of devices' summed counts and the arm's processing times.
    init(devices: [String: FunnelCounts], processingMS: LatencyHistogram) {
        for (device, counts) in devices { record(device: device, counts) }
        self.processingMS = processingMS
    }

    /// Adds the notifications of another tally of the same arm, counted on the same devices as
    /// if they had been added here: the result does not depend on how notifications were split.
    public mutating func merge(_ other: ExperimentArmTally) {
        totals = totals + other.totals
        for (device, trials) in other.perDevice { record(device: device, trials) }
        processingMS.merge(other.processingMS)
    }

    /// Adds counts for a device directly (tests and simulations; `add(_:)` for real states).
    public mutating func record(device: String, _ counts: FunnelCounts) {
        totals = totals + counts
        record(device: device, counts.metricTrials)
    }

    private mutating func record(device: String, _ trials: MetricTrials) {
        let known = perDevice.count
        // One hash lookup: read the old counts and store the new ones in place.
        let old = Self.accumulate(&perDevice[device, default: MetricTrials()], trials)
        moments.update(from: old, to: old + trials, isNewDevice: perDevice.count != known)
    }

    /// Adds `trials` to `stored` and returns the trials before.
    private static func accumulate(_ stored: inout MetricTrials, _ trials: MetricTrials) -> MetricTrials {
        let old = stored
        stored = old + trials
        return old
    }

    /// The metric's successes over trials, summed over notifications.
    public func proportion(_ metric: ExperimentMetric) -> (successes: Int, trials: Int) {
        (totals.successes(metric), totals.trials(metric))
    }

    /// The metric's device-level sums (`D`, sums of `x`, `x^2`, `n`, `n^2`, `x n`), from which
    /// `ArmEstimate` computes gbstats' `RatioStatistic` with sample moments.
    public func ratioMoments(_ metric: ExperimentMetric) -> RatioMoments {
        RatioMoments(devices: devices, numeratorSum: Double(totals.successes(metric)),
                     numeratorSquares: Double(moments.successesSquared[metric]),
                     denominatorSum: Double(totals.trials(metric)),
                     denominatorSquares: Double(moments.trialsSquared[metric]),
                     crossProducts: Double(moments.successesTimesTrials[metric]))
    }

    /// The metric's device-level sums with each device's pre-period sums beside them, for CUPED
    /// (`RegressionAdjustment`); a device without history has covariate 0.
    public func adjustedMoments(_ metric: ExperimentMetric, covariates: ExperimentCovariates) -> AdjustedRatioMoments {
        var moments = AdjustedRatioMoments()
        for (device, trials) in perDevice {
            let pre = covariates.trials(device: device, metric)
            moments.add(numerator: Double(trials.successes[metric]), denominator: Double(trials.trials[metric]),
                        preNumerator: Double(pre.successes), preDenominator: Double(pre.trials))
        }
        return moments
    }

    /// The metric's sums over the devices with trials of it, for `ClusteredProportionComparison`.
    public func deviceMoments(_ metric: ExperimentMetric) -> DeviceMoments {
        var moments = DeviceMoments()
        for trials in perDevice.values where trials.trials[metric] > 0 {
            moments.add(Proportion(validatedSuccesses: trials.successes[metric], trials: trials.trials[metric]))
        }
        return moments
    }

    /// The metric's cross sums over the devices in both this tally and `other` (this one first),
    /// with the number of such devices: what makes two groups that share devices dependent.
    public func sharedDevices(with other: ExperimentArmTally, _ metric: ExperimentMetric) -> (devices: Int, moments: DeviceCrossMoments) {
        var moments = DeviceCrossMoments()
        var devices = 0
        for (device, mine) in perDevice {
            guard let theirs = other.perDevice[device], mine.trials[metric] > 0, theirs.trials[metric] > 0 else { continue }
            devices += 1
            moments.add(first: Proportion(validatedSuccesses: mine.successes[metric], trials: mine.trials[metric]),
                        second: Proportion(validatedSuccesses: theirs.successes[metric], trials: theirs.trials[metric]))
        }
        return (devices, moments)
    }

    /// Mean, per-device variance (delta method) and device count of the metric, for `Lift`;
    /// nil without trials.
    public func summary(_ metric: ExperimentMetric) -> MetricSummary? {
        let x = Double(totals.successes(metric))
        let n = Double(totals.trials(metric))
        let d = Double(devices)
        guard n > 0, d > 0 else { return nil }
        let ratio = x / n
        let meanX = x / d
        let meanN = n / d
        let varianceX = max(0, Double(moments.successesSquared[metric]) / d - meanX * meanX)
        let varianceN = max(0, Double(moments.trialsSquared[metric]) / d - meanN * meanN)
        let covariance = Double(moments.successesTimesTrials[metric]) / d - meanX * meanN
        let perDevice = max(0, (varianceX - 2 * ratio * covariance + ratio * ratio * varianceN) / (meanN * meanN))
        return MetricSummary(mean: ratio, variance: perDevice, count: devices)
    }
}

/// The notifications of one experiment, by the arm each was assigned (intent to treat, from the
/// events' experiment tag) and, separately, by how each was actually shown (as treated).
public struct ExperimentTallies: Sendable, Equatable {
    /// Category filter of the definition; empty for all.
    public let categories: Set<String>
    /// What `ObservedArm` positions point into.
    public let armIndex: ExperimentArmIndex
    /// By position in `armIndex`.
    private var armTallies: [ExperimentArmTally]
    /// Displayed rich, all arms together.
    public private(set) var rich = ExperimentArmTally()
    /// Displayed plain, all arms together.
    public private(set) var plain = ExperimentArmTally()
    /// Notifications tagged with another experiment, or with none.
    public private(set) var otherExperiment = 0
    /// Tagged with this experiment but an arm it does not have.
    public private(set) var unknownArm = 0
    /// Tagged with this experiment but of a category it does not cover.
    public private(set) var outsideCategories = 0

    public init(definition: ExperimentDefinition) {
        categories = Set(definition.categories)
        armIndex = ExperimentArmIndex(definition)
        armTallies = Array(repeating: ExperimentArmTally(), count: armIndex.names.count)
    }

    public var experimentID: String { armIndex.experimentID }

    /// By assigned arm name.
    public var arms: [String: ExperimentArmTally] {
        Dictionary(uniqueKeysWithValues: zip(armIndex.names, armTallies))
    }

    /// The tally of the arm named `name`, nil for an arm the experiment does not have.
    public func arm(named name: String) -> ExperimentArmTally? {
        armIndex.position(of: name).map { armTallies[$0] }
    }

    /// Adds one notification's state; each notification once.
    public mutating func add(_ state: NotificationState) {
        guard let observation = ExperimentObservation(state, arms: armIndex) else {
            // Only an empty state has no origin; it is untagged like any state without a tag.
            otherExperiment += 1
            return
        }
        add(observation)
    }

    /// Adds one notification; each notification once.
    public mutating func add(_ observation: ExperimentObservation) {
        switch Self.destination(of: observation, categories: categories) {
        case .otherExperiment: otherExperiment += 1
        case .outsideCategories: outsideCategories += 1
        case .unknownArm: unknownArm += 1
        case .arm(let position):
            armTallies[position].add(observation)
            switch observation.presentation {
            case .rich: rich.add(observation)
            case .plain: plain.add(observation)
            case .unknown: break
            }
        }
    }

    /// Where a notification counts: in an arm's tally (and, by its presentation, in `rich` or
    /// `plain`), or in one of the excluded counts.
    public enum Destination: Sendable, Equatable {
        case arm(Int)
        case otherExperiment, outsideCategories, unknownArm
    }

    public static func destination(of observation: ExperimentObservation, categories: Set<String>) -> Destination {
        if observation.arm == .otherExperiment { return .otherExperiment }
        if !categories.isEmpty && !categories.contains(observation.category) { return .outsideCategories }
        guard case .arm(let position) = observation.arm else { return .unknownArm }
        return .arm(position)
    }

    /// The tallies an `ExperimentTallyState` keeps, equal to adding its notifications one by one.
    public init(definition: ExperimentDefinition, restoring state: ExperimentTallyState) {
        self.init(definition: definition)
        for (key, devices) in state.devices {
            let histogram = state.processing[key].flatMap { try? LatencyHistogram(counts: $0) } ?? LatencyHistogram()
            let tally = ExperimentArmTally(devices: devices, processingMS: histogram)
            switch key {
            case .arm(let position) where armTallies.indices.contains(position): armTallies[position] = tally
            case .arm: break
            case .rich: rich = tally
            case .plain: plain = tally
            }
        }
        otherExperiment = state.otherExperiment
        unknownArm = state.unknownArm
        outsideCategories = state.outsideCategories
    }

    /// Adds the notifications of another tally of the same experiment (e.g. of another range of
    /// notifications); the result equals adding all of them to one tally.
    public mutating func merge(_ other: ExperimentTallies) {
        precondition(other.armIndex == armIndex && other.categories == categories, "tallies of different experiments")
        for position in armTallies.indices { armTallies[position].merge(other.armTallies[position]) }
        rich.merge(other.rich)
        plain.merge(other.plain)
        otherExperiment += other.otherExperiment
        unknownArm += other.unknownArm
        outsideCategories += other.outsideCategories
    }

    /// Adds counts for a device of an arm directly (tests and simulations); false for an arm
    /// the experiment does not have.
    @discardableResult
    public mutating func record(arm: String, device: String, _ counts: FunnelCounts) -> Bool {
        guard let position = armIndex.position(of: arm) else { return false }
        armTallies[position].record(device: device, counts)
        return true
    }

    /// Adds as-treated counts directly (tests and simulations).
    public mutating func recordAsTreated(_ presentation: Presentation, device: String, _ counts: FunnelCounts) {
        switch presentation {
        case .rich: rich.record(device: device, counts)
        case .plain: plain.record(device: device, counts)
        }
    }
}
