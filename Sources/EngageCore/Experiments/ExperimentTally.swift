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
    /// The ids of the devices `counts` numbers; shared with the other tallies of an experiment
    /// (`ExperimentTallies`), so it may number devices this tally does not count.
    private var index = DeviceIndex()
    private var counts = NumberedArmTally()

    public init() {}

    init(index: DeviceIndex, counts: NumberedArmTally) {
        self.index = index
        self.counts = counts
    }

    /// Sums over all the arm's notifications.
    public var totals: FunnelCounts { counts.totals }
    /// `processing_ms` of the delivered notifications.
    public var processingMS: LatencyHistogram { counts.processingMS }
    /// Sums over devices of the squares and products of every metric's successes and trials.
    public var moments: MetricMoments { counts.moments }

    /// Distinct devices with at least one notification.
    public var devices: Int { counts.devices }

    /// Adds one notification (each notification once: tallies are rebuilt for every analysis).
    public mutating func add(_ observation: ExperimentObservation) {
        counts.add(observation, number: index.number(of: observation.deviceID))
    }

    /// Adds the notifications of another tally of the same arm, counted on the same devices as
    /// if they had been added here: the result does not depend on how notifications were split.
    public mutating func merge(_ other: ExperimentArmTally) {
        counts.merge(other.counts, numbers: index.renumber(other.index))
    }

    /// Adds counts for a device directly (tests and simulations; `add(_:)` for real states).
    public mutating func record(device: String, _ counts: FunnelCounts) {
        self.counts.record(number: index.number(of: device), counts)
    }

    /// The device's successes and trials of every metric; nil when it has no notification here.
    func trials(device: String) -> MetricTrials? {
        index.existingNumber(of: device).flatMap { counts.trials(number: $0) }
    }

    /// Equal counts on the same device ids, however the devices were numbered.
    public static func == (a: ExperimentArmTally, b: ExperimentArmTally) -> Bool {
        guard a.totals == b.totals, a.processingMS == b.processingMS, a.moments == b.moments,
              a.devices == b.devices else { return false }
        var equal = true
        a.counts.forEachDevice { number, trials in
            if equal, b.trials(device: a.index.ids[number]) != trials { equal = false }
        }
        return equal
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
        counts.forEachDevice { number, trials in
            let pre = covariates.trials(device: index.ids[number], metric)
            moments.add(numerator: Double(trials.successes[metric]), denominator: Double(trials.trials[metric]),
                        preNumerator: Double(pre.successes), preDenominator: Double(pre.trials))
        }
        return moments
    }

    /// The metric's sums over the devices with trials of it, for `ClusteredProportionComparison`.
    public func deviceMoments(_ metric: ExperimentMetric) -> DeviceMoments {
        var moments = DeviceMoments()
        counts.forEachDevice { _, trials in
            guard trials.trials[metric] > 0 else { return }
            moments.add(Proportion(validatedSuccesses: trials.successes[metric], trials: trials.trials[metric]))
        }
        return moments
    }

    /// The metric's cross sums over the devices in both this tally and `other` (this one first),
    /// with the number of such devices: what makes two groups that share devices dependent.
    public func sharedDevices(with other: ExperimentArmTally, _ metric: ExperimentMetric) -> (devices: Int, moments: DeviceCrossMoments) {
        var moments = DeviceCrossMoments()
        var devices = 0
        counts.forEachDevice { number, mine in
            guard mine.trials[metric] > 0, let theirs = other.trials(device: index.ids[number]),
                  theirs.trials[metric] > 0 else { return }
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
    /// The devices of every tally below, numbered once.
    private var deviceIndex = DeviceIndex()
    /// By position in `armIndex`.
    private var armTallies: [NumberedArmTally]
    private var richTally = NumberedArmTally()
    private var plainTally = NumberedArmTally()
    /// Notifications tagged with another experiment, or with none.
    public private(set) var otherExperiment = 0
    /// Tagged with this experiment but an arm it does not have.
    public private(set) var unknownArm = 0
    /// Tagged with this experiment but of a category it does not cover.
    public private(set) var outsideCategories = 0

    public init(definition: ExperimentDefinition) {
        categories = Set(definition.categories)
        armIndex = ExperimentArmIndex(definition)
        armTallies = Array(repeating: NumberedArmTally(), count: armIndex.names.count)
    }

    /// Displayed rich, all arms together.
    public var rich: ExperimentArmTally { ExperimentArmTally(index: deviceIndex, counts: richTally) }
    /// Displayed plain, all arms together.
    public var plain: ExperimentArmTally { ExperimentArmTally(index: deviceIndex, counts: plainTally) }

    public var experimentID: String { armIndex.experimentID }

    /// By assigned arm name.
    public var arms: [String: ExperimentArmTally] {
        Dictionary(uniqueKeysWithValues: zip(armIndex.names, armTallies.indices.map(arm(at:))))
    }

    /// The tally of the arm named `name`, nil for an arm the experiment does not have.
    public func arm(named name: String) -> ExperimentArmTally? {
        armIndex.position(of: name).map(arm(at:))
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
            let number = deviceIndex.number(of: observation.deviceID)
            armTallies[position].add(observation, number: number)
            switch observation.presentation {
            case .rich: richTally.add(observation, number: number)
            case .plain: plainTally.add(observation, number: number)
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
            // A position the definition does not have numbers none of its devices.
            if case .arm(let position) = key, !armTallies.indices.contains(position) { continue }
            let histogram = state.processing[key].flatMap { try? LatencyHistogram(counts: $0) } ?? LatencyHistogram()
            var tally = NumberedArmTally(processingMS: histogram)
            for (device, counts) in devices { tally.record(number: deviceIndex.number(of: device), counts) }
            switch key {
            case .arm(let position): armTallies[position] = tally
            case .rich: richTally = tally
            case .plain: plainTally = tally
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
        let numbers = deviceIndex.renumber(other.deviceIndex)
        for position in armTallies.indices { armTallies[position].merge(other.armTallies[position], numbers: numbers) }
        richTally.merge(other.richTally, numbers: numbers)
        plainTally.merge(other.plainTally, numbers: numbers)
        otherExperiment += other.otherExperiment
        unknownArm += other.unknownArm
        outsideCategories += other.outsideCategories
    }

    /// Equal counts on the same device ids, however the devices were numbered.
    public static func == (a: ExperimentTallies, b: ExperimentTallies) -> Bool {
        a.categories == b.categories && a.armIndex == b.armIndex && a.otherExperiment == b.otherExperiment
            && a.unknownArm == b.unknownArm && a.outsideCategories == b.outsideCategories
            && a.rich == b.rich && a.plain == b.plain
            && a.armIndex.names.indices.allSatisfy { a.arm(at: $0) == b.arm(at: $0) }
    }

    private func arm(at position: Int) -> ExperimentArmTally {
        ExperimentArmTally(index: deviceIndex, counts: armTallies[position])
    }

    /// Adds counts for a device of an arm directly (tests and simulations); false for an arm
    /// the experiment does not have.
    @discardableResult
    public mutating func record(arm: String, device: String, _ counts: FunnelCounts) -> Bool {
        guard let position = armIndex.position(of: arm) else { return false }
        armTallies[position].record(number: deviceIndex.number(of: device), counts)
        return true
    }

    /// Adds as-treated counts directly (tests and simulations).
    public mutating func recordAsTreated(_ presentation: Presentation, device: String, _ counts: FunnelCounts) {
        switch presentation {
        case .rich: richTally.record(number: deviceIndex.number(of: device), counts)
        case .plain: plainTally.record(number: deviceIndex.number(of: device), counts)
        }
    }
}
