/// Notification counts behind the experiment metrics: of one notification, one device or one arm.
public struct ExperimentCounts: Sendable, Hashable {
    public var notifications = 0
    public var delivered = 0
    public var displayed = 0
    /// Displayed rich and delivered: the numerator of `richDisplay`.
    public var richDisplayed = 0
    /// The engagements below count only notifications that were displayed (their denominator).
    public var expanded = 0
    public var actioned = 0
    public var opened = 0
    public var dismissed = 0
    public var replied = 0

    public init(notifications: Int = 0, delivered: Int = 0, displayed: Int = 0, richDisplayed: Int = 0,
                expanded: Int = 0, actioned: Int = 0, opened: Int = 0, dismissed: Int = 0, replied: Int = 0) {
        self.notifications = notifications
        self.delivered = delivered
        self.displayed = displayed
        self.richDisplayed = richDisplayed
        self.expanded = expanded
        self.actioned = actioned
        self.opened = opened
        self.dismissed = dismissed
        self.replied = replied
    }

    /// The counts of one notification.
    public init(_ state: NotificationState) {
        self.init(delivered: state.isDelivered, presentation: state.presentation, expanded: state.isExpanded,
                  actioned: state.isActioned, opened: state.isOpened, dismissed: state.isDismissed,
                  replied: state.isReplied)
    }

    /// The counts of one notification from what its events showed; it was displayed when its
    /// presentation is known, and only displayed notifications count engagement.
    public init(delivered: Bool, presentation: ObservedPresentation, expanded: Bool, actioned: Bool,
                opened: Bool, dismissed: Bool, replied: Bool) {
        let displayed = presentation != .unknown
        self.init(
            notifications: 1,
            delivered: delivered ? 1 : 0,
            displayed: displayed ? 1 : 0,
            richDisplayed: delivered && presentation == .rich ? 1 : 0,
            expanded: displayed && expanded ? 1 : 0,
            actioned: displayed && actioned ? 1 : 0,
            opened: displayed && opened ? 1 : 0,
            dismissed: displayed && dismissed ? 1 : 0,
            replied: displayed && replied ? 1 : 0)
    }

    /// The metric's numerator.
    public func successes(_ metric: ExperimentMetric) -> Int {
        switch metric {
        case .expansion: expanded
        case .action: actioned
        case .open: opened
        case .reply: replied
        case .dismiss: dismissed
        case .richDisplay: richDisplayed
        }
    }

    /// The metric's denominator: displayed, or delivered for `richDisplay`.
    public func trials(_ metric: ExperimentMetric) -> Int {
        metric == .richDisplay ? delivered : displayed
    }

    public static func + (a: ExperimentCounts, b: ExperimentCounts) -> ExperimentCounts {
        ExperimentCounts(
            notifications: a.notifications + b.notifications, delivered: a.delivered + b.delivered,
            displayed: a.displayed + b.displayed, richDisplayed: a.richDisplayed + b.richDisplayed,
            expanded: a.expanded + b.expanded, actioned: a.actioned + b.actioned, opened: a.opened + b.opened,
            dismissed: a.dismissed + b.dismissed, replied: a.replied + b.replied)
    }
}

/// One arm's notifications, kept per device because the device is the unit of randomization.
///
/// A metric is a ratio of per-device sums, `R = sum x_d / sum n_d` (successes over trials), whose
/// variance comes from the delta method over devices, as GrowthBook analyses ratio metrics:
///
///     Var R = (s_x^2 - 2 R s_xn + R^2 s_n^2) / (D mu_n^2)
///
/// with population moments over the `D` devices. Notifications of one device are correlated
/// (some people open everything); treating them as independent would make intervals too narrow.
/// With one notification per device this is exactly the binomial `p (1 - p) / n`.
/// The moments are updated as each device's counts change, so analysis does not revisit devices.
public struct ExperimentArmTally: Sendable, Equatable {
    /// Sums over all the arm's notifications.
    public private(set) var totals = ExperimentCounts()
    /// `processing_ms` of the delivered notifications.
    public private(set) var processingMS = LatencyHistogram()
    private var perDevice: [String: ExperimentCounts] = [:]
    /// Sums over devices of x^2, n^2 and x n, one lane per metric in `ExperimentMetric.allCases`
    /// order (see `successesAndTrials`); vectors rather than an array of structs because every
    /// notification updates all of them.
    private var xx = SIMD8<Int>()
    private var nn = SIMD8<Int>()
    private var xn = SIMD8<Int>()

    public init() {}

    /// Distinct devices with at least one notification.
    public var devices: Int { perDevice.count }

    /// Adds one notification (each notification once: tallies are rebuilt for every analysis).
    public mutating func add(_ observation: ExperimentObservation) {
        record(device: observation.deviceID, observation.counts)
        if let processing = observation.processingMS { processingMS.record(Double(processing)) }
    }

    /// Adds the notifications of another tally of the same arm, counted on the same devices as
    /// if they had been added here: the result does not depend on how notifications were split.
    public mutating func merge(_ other: ExperimentArmTally) {
        for (device, counts) in other.perDevice { record(device: device, counts) }
        processingMS.merge(other.processingMS)
    }

    /// Adds counts for a device directly (tests and simulations; `add(_:)` for real states).
    public mutating func record(device: String, _ counts: ExperimentCounts) {
        // One hash lookup: read the old counts and store the new ones in place.
        let old = Self.accumulate(&perDevice[device, default: ExperimentCounts()], counts)
        let new = old + counts
        totals = totals + counts
        let (x0, n0) = Self.successesAndTrials(old)
        let (x1, n1) = Self.successesAndTrials(new)
        xx &+= x1 &* x1 &- x0 &* x0
        nn &+= n1 &* n1 &- n0 &* n0
        xn &+= x1 &* n1 &- x0 &* n0
    }

    /// Each metric's successes and trials (`ExperimentCounts.successes`, `trials`), one lane per
    /// metric in `ExperimentMetric.allCases` order; the last two lanes are unused.
    static func successesAndTrials(_ c: ExperimentCounts) -> (x: SIMD8<Int>, n: SIMD8<Int>) {
        // expansion, action, open, reply, dismiss, richDisplay
        (SIMD8(c.expanded, c.actioned, c.opened, c.replied, c.dismissed, c.richDisplayed, 0, 0),
         SIMD8(c.displayed, c.displayed, c.displayed, c.displayed, c.displayed, c.delivered, 0, 0))
    }

    /// The lane of `metric` in the moment vectors.
    static func lane(_ metric: ExperimentMetric) -> Int {
        metrics.firstIndex(of: metric)!
    }

    /// `ExperimentMetric.allCases`, built once.
    private static let metrics = ExperimentMetric.allCases

    /// Adds `counts` to `stored` and returns the counts before.
    private static func accumulate(_ stored: inout ExperimentCounts, _ counts: ExperimentCounts) -> ExperimentCounts {
        let old = stored
        stored = old + counts
        return old
    }

    /// The metric's successes over trials, summed over notifications.
    public func proportion(_ metric: ExperimentMetric) -> (successes: Int, trials: Int) {
        (totals.successes(metric), totals.trials(metric))
    }

    /// Mean, per-device variance (delta method) and device count of the metric, for `Lift`;
    /// nil without trials.
    public func summary(_ metric: ExperimentMetric) -> MetricSummary? {
        let x = Double(totals.successes(metric))
        let n = Double(totals.trials(metric))
        let d = Double(devices)
        guard n > 0, d > 0 else { return nil }
        let lane = Self.lane(metric)
        let ratio = x / n
        let meanX = x / d
        let meanN = n / d
        let varianceX = max(0, Double(xx[lane]) / d - meanX * meanX)
        let varianceN = max(0, Double(nn[lane]) / d - meanN * meanN)
        let covariance = Double(xn[lane]) / d - meanX * meanN
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
        if observation.arm == .otherExperiment {
            otherExperiment += 1
            return
        }
        if !categories.isEmpty && !categories.contains(observation.category) {
            outsideCategories += 1
            return
        }
        guard case .arm(let position) = observation.arm else {
            unknownArm += 1
            return
        }
        armTallies[position].add(observation)
        switch observation.presentation {
        case .rich: rich.add(observation)
        case .plain: plain.add(observation)
        case .unknown: break
        }
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
    public mutating func record(arm: String, device: String, _ counts: ExperimentCounts) -> Bool {
        guard let position = armIndex.position(of: arm) else { return false }
        armTallies[position].record(device: device, counts)
        return true
    }

    /// Adds as-treated counts directly (tests and simulations).
    public mutating func recordAsTreated(_ presentation: Presentation, device: String, _ counts: ExperimentCounts) {
        switch presentation {
        case .rich: rich.record(device: device, counts)
        case .plain: plain.record(device: device, counts)
        }
    }
}
