/// What the simulator knows and a report should find: the configured rates and lifts, and the
/// counts realized so far, tallied as `NotificationState` would fold the emitted events (duplicates
/// and emission order do not change them).
public struct SimulationGroundTruth: Sendable, Equatable {
    public let seed: UInt64
    /// The configured categories, in scenario order.
    public let categories: [SimulatedCategory]
    /// How much devices differ in engagement.
    public let propensity: DevicePropensity

    /// Per category and presentation of the notifications displayed so far.
    public internal(set) var realized: [SimulationCell: EngagementTally] = [:]
    /// Delivery outcomes per network type reported in `delivered` events.
    public internal(set) var outcomesByNetwork: [NetworkType: OutcomeTally] = [:]
    /// Delivery outcomes per category.
    public internal(set) var outcomesByCategory: [String: OutcomeTally] = [:]
    /// Per experiment arm; devices are counted for the whole population at the start.
    public internal(set) var arms: [String: ArmTally] = [:]
    /// Devices outside the experiment (or all devices without one).
    public internal(set) var unassignedDevices: Int = 0

    /// Notifications generated so far.
    public internal(set) var notifications: Int = 0
    /// Distinct events generated so far.
    public internal(set) var events: Int = 0
    /// Events emitted so far, duplicates included.
    public internal(set) var emitted: Int = 0
    /// Second copies of events emitted so far.
    public internal(set) var duplicatesEmitted: Int = 0
    /// Notifications whose events were emitted in an order other than their time order.
    public internal(set) var shuffledNotifications: Int = 0

    init(seed: UInt64, categories: [SimulatedCategory], propensity: DevicePropensity = .none) {
        self.seed = seed
        self.categories = categories
        self.propensity = propensity
    }

    /// The configured category called `name`.
    public func category(_ name: String) -> SimulatedCategory? {
        categories.first { $0.name == name }
    }

    /// The rates of `category` shown with `presentation` to a device without propensity (shift 0);
    /// nil for an unknown category.
    public func configuredRates(category name: String, presentation: Presentation) -> EngagementRates? {
        category(name)?.rates(for: presentation)
    }

    /// The population's true rates of `category` shown with `presentation`: the configured rates
    /// averaged over the devices' propensity (equal to them without one). A notification goes to
    /// a device drawn at random and the propensity is drawn apart from the network, so these are
    /// also the true rates among the notifications displayed that way. Nil for an unknown category.
    public func expectedRates(category name: String, presentation: Presentation) -> EngagementRates? {
        configuredRates(category: name, presentation: presentation).map(propensity.expectedRates)
    }

    /// The true rich-minus-plain difference of `stage`'s rate in `category`, in the population.
    public func expectedDifference(category name: String, stage: FunnelStage) -> Double? {
        guard let rich = expectedRates(category: name, presentation: .rich),
              let plain = expectedRates(category: name, presentation: .plain) else { return nil }
        return rich[stage] - plain[stage]
    }

    /// The true rich-over-plain ratio of `stage`'s rate in `category`, in the population; nil when
    /// the plain rate is 0.
    public func expectedRatio(category name: String, stage: FunnelStage) -> Double? {
        guard let rich = expectedRates(category: name, presentation: .rich),
              let plain = expectedRates(category: name, presentation: .plain), plain[stage] > 0 else { return nil }
        return rich[stage] / plain[stage]
    }

    /// The configured rich lift of `category` (for a device without propensity).
    public func configuredLift(category name: String) -> EngagementLift? {
        category(name)?.richLift
    }

    /// The realized counts of one cell (zero when nothing was displayed there).
    public func realized(category: String, presentation: Presentation) -> EngagementTally {
        realized[SimulationCell(category: category, presentation: presentation)] ?? EngagementTally()
    }

    /// Realized counts over all categories of one presentation.
    public func realized(presentation: Presentation) -> EngagementTally {
        realized.filter { $0.key.presentation == presentation }.values.reduce(EngagementTally(), +)
    }
}

/// A category and a presentation.
public struct SimulationCell: Sendable, Hashable, CustomStringConvertible {
    public var category: String
    public var presentation: Presentation

    public init(category: String, presentation: Presentation) {
        self.category = category
        self.presentation = presentation
    }

    public var description: String { "\(category)/\(presentation.rawValue)" }
}

/// Counts of displayed notifications and of those with each engagement (a notification counts
/// once per stage, as in `NotificationState.reachedStages`).
public struct EngagementTally: Sendable, Hashable {
    /// `displayed` and the stages of `FunnelStage.engagements`.
    public var counts = FunnelCounts()
    /// Notifications per app-defined action id (a reply counts under `reply`).
    public var actions: [String: Int] = [:]

    public init() {}

    public subscript(stage: FunnelStage) -> Int {
        get { counts[stage] }
        set { counts[stage] = newValue }
    }

    /// The share of displayed notifications that reached `stage`; 0 when none were displayed.
    public func rate(_ stage: FunnelStage) -> Double {
        counts[.displayed] == 0 ? 0 : Double(counts[stage]) / Double(counts[.displayed])
    }

    /// All realized rates.
    public var rates: EngagementRates {
        EngagementRates(expanded: rate(.expanded), actioned: rate(.actioned), opened: rate(.opened),
                        dismissed: rate(.dismissed), replied: rate(.replied))
    }

    public static func + (a: EngagementTally, b: EngagementTally) -> EngagementTally {
        var sum = a
        sum.counts += b.counts
        sum.actions.merge(b.actions, uniquingKeysWith: +)
        return sum
    }
}

/// Counts of delivery outcomes.
public struct OutcomeTally: Sendable, Hashable {
    public var counts: [DeliveryOutcome: Int] = [:]

    public init() {}

    public var total: Int { counts.values.reduce(0, +) }
    public subscript(outcome: DeliveryOutcome) -> Int { counts[outcome] ?? 0 }

    /// The share delivered rich (`attached`); 0 when there were none.
    public var richShare: Double {
        total == 0 ? 0 : Double(self[.attached]) / Double(total)
    }

    /// The share delivered rich of the pushes whose strategy chose a variant (all but
    /// `not_requested`); 0 when there were none.
    public var richShareOfAttempts: Double {
        let attempts = total - self[.notRequested]
        return attempts == 0 ? 0 : Double(self[.attached]) / Double(attempts)
    }

    mutating func record(_ outcome: DeliveryOutcome) {
        counts[outcome, default: 0] += 1
    }
}

/// What happened in one experiment arm.
public struct ArmTally: Sendable, Hashable {
    public var strategy: AttachmentStrategy
    /// The weight configured (the tags' probability).
    public var weight: Double
    /// Devices assigned, over the whole population.
    public var devices = 0
    /// Notifications to those devices so far.
    public var notifications = 0
    /// Their delivery outcomes.
    public var outcomes = OutcomeTally()
    /// Their engagement, rich and plain together.
    public var engagement = EngagementTally()

    public init(strategy: AttachmentStrategy, weight: Double) {
        self.strategy = strategy
        self.weight = weight
    }
}
