/// An A/B experiment of attachment strategies: who is in it, which strategies compete, what it
/// is judged by, and when it is analysed.
///
/// Devices are the unit of randomization (GrowthBook hash v2 of `hashSeed` and the device id);
/// each notification carries its device's arm in the events' experiment tag.
public struct ExperimentDefinition: Sendable, Equatable {
    /// A slug: lowercase letters, digits and single `-` or `_` between them, at most 100 bytes
    /// (the experiment tag's limit).
    public var id: String
    public var appID: String
    /// The categories whose notifications take part; empty for all.
    public var categories: [String]
    /// Exactly one arm is the control; weights add up to 1.
    public var arms: [ExperimentArmDefinition]
    public var hashSeed: String
    /// The share of devices in the experiment, in (0, 1]; the others keep the app's strategy.
    public var coverage: Double
    public var primaryMetric: ExperimentMetric
    public var guardrails: [ExperimentGuardrail]
    /// Significance level of the decision, in (0, 0.5); a new experiment needs at least
    /// `smallestAlpha` (1e-9).
    public var alpha: Double
    /// When the analysis runs.
    public var schedule: CronSchedule
    public var startAt: Timestamp?
    public var stopAt: Timestamp?
    public var status: ExperimentStatus
    /// How the analysis decides; see `ExperimentAnalysis`.
    public var analysis: ExperimentAnalysisSettings

    public init(id: String, appID: String, categories: [String] = [], arms: [ExperimentArmDefinition],
                hashSeed: String? = nil, coverage: Double = 1, primaryMetric: ExperimentMetric,
                guardrails: [ExperimentGuardrail] = [], alpha: Double = 0.05, schedule: CronSchedule = .hourly,
                startAt: Timestamp? = nil, stopAt: Timestamp? = nil, status: ExperimentStatus = .draft,
                analysis: ExperimentAnalysisSettings = ExperimentAnalysisSettings()) {
        self.id = id
        self.appID = appID
        // As ingestion stores them, so that a category (and an arm's name, below) written in
        // another Unicode form than the app's events still matches them byte for byte.
        self.categories = categories.map(IdentifierText.normalized)
        self.arms = arms
        self.hashSeed = hashSeed ?? id
        self.coverage = coverage
        self.primaryMetric = primaryMetric
        self.guardrails = guardrails
        self.alpha = alpha
        self.schedule = schedule
        self.startAt = startAt
        self.stopAt = stopAt
        self.status = status
        self.analysis = analysis
    }

    /// The control arm (the first marked one, should validation have been skipped).
    public var control: ExperimentArmDefinition? { arms.first(where: \.isControl) }

    /// The arms compared with the control, in definition order.
    public var treatments: [ExperimentArmDefinition] { arms.filter { !$0.isControl } }

    /// Whether notifications of `category` take part.
    public func admits(category: String) -> Bool {
        categories.isEmpty || categories.contains(category)
    }

    /// Whether the experiment assigns devices at `time`: running, started, not yet stopped.
    public func isActive(at time: Timestamp) -> Bool {
        guard status == .running else { return false }
        if let startAt, time < startAt { return false }
        if let stopAt, time >= stopAt { return false }
        return true
    }

    /// The analysis time due at `now`, given the time of the last scheduled run (nil before the
    /// first): the schedule's latest time after it, never past `stopAt`; once `now` reaches
    /// `stopAt`, `stopAt` itself, so that a last analysis closes the experiment, unless a run at
    /// or after it exists already. Nil when nothing is due.
    public func dueRun(after lastRun: Timestamp?, now: Timestamp) -> Timestamp? {
        guard let stopAt else { return schedule.mostRecentDue(after: lastRun, now: now) }
        if let lastRun, lastRun >= stopAt { return nil }
        if now >= stopAt { return stopAt }
        return schedule.mostRecentDue(after: lastRun, now: now)
    }
}

/// One competing strategy.
public struct ExperimentArmDefinition: Sendable, Equatable {
    /// The experiment tag's `arm`: 1 to 100 bytes.
    public var name: String
    public var strategy: AttachmentStrategy
    /// The share of covered devices, in (0, 1]; also the tag's `probability`.
    public var weight: Double
    public var isControl: Bool

    public init(name: String, strategy: AttachmentStrategy, weight: Double, isControl: Bool = false) {
        self.name = IdentifierText.normalized(name)
        self.strategy = strategy
        self.weight = weight
        self.isControl = isControl
    }
}

public enum ExperimentStatus: String, Sendable, Hashable, CaseIterable {
    case draft, running, stopped
}

/// A rate the experiment compares between arms (see `EngagementMetric`).
public typealias ExperimentMetric = EngagementMetric

extension EngagementMetric {
    /// The direction a guardrail on this metric protects by default.
    public var defaultGuardrailDirection: GuardrailDirection {
        higherIsBetter ? .mustNotDecrease : .mustNotIncrease
    }
}

/// A metric that must not move the wrong way for an arm to ship.
public struct ExperimentGuardrail: Sendable, Hashable {
    public var metric: ExperimentMetric
    public var direction: GuardrailDirection

    public init(_ metric: ExperimentMetric, direction: GuardrailDirection? = nil) {
        self.metric = metric
        self.direction = direction ?? metric.defaultGuardrailDirection
    }
}

public enum GuardrailDirection: String, Sendable, Hashable, CaseIterable {
    case mustNotDecrease = "must_not_decrease"
    case mustNotIncrease = "must_not_increase"
}

/// The parameters of the decision rule (see `ExperimentAnalysis`).
public struct ExperimentAnalysisSettings: Sendable, Equatable {
    /// The sequential test's `N*`: the number of devices (both arms of a comparison together)
    /// at which the confidence sequence is tightest. GrowthBook's default is 5,000.
    public var sequentialTuning: Double
    /// Relative lifts within `+-equivalenceMargin` count as no effect (0.02 = 2 %).
    public var equivalenceMargin: Double
    /// No decision other than `continue` before every arm has this many devices.
    public var minimumDevicesPerArm: Int
    /// Stop without an effect once every arm has this many notifications in the primary
    /// metric's denominator; nil for no limit.
    public var maximumNotificationsPerArm: Int?
    /// CUPED's pre-experiment window: the days before `startAt` in which each device's same
    /// metric is read as its covariate; nil for no adjustment (`"cuped": "off"`).
    public var cupedPrePeriodDays: Int?

    public static let defaultCupedPrePeriodDays = 14
    /// The longest window accepted (a year).
    public static let maximumCupedPrePeriodDays = 366

    public init(sequentialTuning: Double = Lift.defaultSequentialTuning, equivalenceMargin: Double = 0.02,
                minimumDevicesPerArm: Int = 100, maximumNotificationsPerArm: Int? = nil,
                cupedPrePeriodDays: Int? = Self.defaultCupedPrePeriodDays) {
        self.sequentialTuning = sequentialTuning
        self.equivalenceMargin = equivalenceMargin
        self.minimumDevicesPerArm = minimumDevicesPerArm
        self.maximumNotificationsPerArm = maximumNotificationsPerArm
        self.cupedPrePeriodDays = cupedPrePeriodDays
    }
}

// MARK: - Validation

/// One thing wrong with a definition: the JSON path of the field (`arms[1].weight`) and a
/// sentence fragment completing it (`must lie in (0, 1]`).
public struct ExperimentProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public var field: String
    public var problem: String

    public init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }

    public var description: String { "\(field): \(problem)" }
}

extension ExperimentDefinition {
    /// Every problem, in field order; empty when the definition is valid.
    public var problems: [ExperimentProblem] {
        var found: [ExperimentProblem] = []
        func add(_ field: String, _ problem: String) {
            found.append(ExperimentProblem(field: field, problem: problem))
        }
        if !Self.isSlug(id) {
            add("id", "must be 1 to 100 bytes of lowercase letters and digits, separated by single '-' or '_'")
        }
        if appID.isEmpty || appID.utf8.count > 100 { add("app_id", "must be 1 to 100 bytes long") }
        var seenCategories = Set<String>()
        for (i, category) in categories.enumerated() {
            if category.isEmpty || category.utf8.count > 100 {
                add("categories[\(i)]", "must be 1 to 100 bytes long")
            } else if !seenCategories.insert(category).inserted {
                add("categories[\(i)]", "repeats \"\(category)\"")
            }
        }
        if arms.count < 2 { add("arms", "must have at least 2 arms") }
        var seenArms = Set<String>()
        for (i, arm) in arms.enumerated() {
            if arm.name.isEmpty || arm.name.utf8.count > 100 {
                add("arms[\(i)].name", "must be 1 to 100 bytes long")
            } else if !seenArms.insert(arm.name).inserted {
                add("arms[\(i)].name", "repeats \"\(arm.name)\"")
            }
            if !(arm.weight > 0 && arm.weight <= 1) { add("arms[\(i)].weight", "must lie in (0, 1]") }
        }
        let controls = arms.filter(\.isControl).count
        if controls != 1 { add("arms", "must have exactly one control arm, found \(controls)") }
        let totalWeight = arms.reduce(0) { $0 + $1.weight }
        if arms.count >= 2, abs(totalWeight - 1) > 1e-6 {
            add("arms", "weights must add up to 1, found \(totalWeight)")
        }
        if hashSeed.isEmpty || hashSeed.utf8.count > 100 { add("hash_seed", "must be 1 to 100 bytes long") }
        if !(coverage > 0 && coverage <= 1) { add("coverage", "must lie in (0, 1]") }
        var seenGuardrails = Set<ExperimentMetric>()
        for (i, guardrail) in guardrails.enumerated() {
            if guardrail.metric == primaryMetric {
                add("guardrails[\(i)].metric", "must differ from the primary metric")
            } else if !seenGuardrails.insert(guardrail.metric).inserted {
                add("guardrails[\(i)].metric", "repeats \"\(guardrail.metric.rawValue)\"")
            }
        }
        if !(alpha > 0 && alpha < 0.5) {
            add("alpha", "must lie in (0, 0.5)")
        } else if 1 - alpha / Double(max(treatments.count, 1)) == 1 {
            // Only the levels the analysis cannot carry: the floor of `smallestAlpha` is checked
            // when an experiment is created, so one stored with a smaller alpha still reads.
            add("alpha", Self.smallestAlphaProblem)
        }
        if let startAt, let stopAt, stopAt <= startAt { add("stop_at", "must be after start_at") }
        // A draft stopped without ever starting keeps no start: nothing was assigned or analysed.
        if status == .running && startAt == nil { add("start_at", "is required once the experiment is running") }
        if !(analysis.sequentialTuning > 0 && analysis.sequentialTuning.isFinite) {
            add("sequential_tuning", "must be a positive number")
        }
        if !(analysis.equivalenceMargin >= 0 && analysis.equivalenceMargin < 1) {
            add("equivalence_margin", "must lie in [0, 1)")
        }
        if analysis.minimumDevicesPerArm < 2 { add("minimum_devices_per_arm", "must be at least 2") }
        if let maximum = analysis.maximumNotificationsPerArm, maximum < 1 {
            add("maximum_notifications_per_arm", "must be positive")
        }
        if let days = analysis.cupedPrePeriodDays, !(1...ExperimentAnalysisSettings.maximumCupedPrePeriodDays).contains(days) {
            add("cuped.pre_period_days", "must lie in [1, \(ExperimentAnalysisSettings.maximumCupedPrePeriodDays)]")
        }
        return found
    }

    /// Throws the first of `problems`.
    public func validate() throws(ExperimentProblem) {
        if let first = problems.first { throw first }
    }

    /// The smallest `alpha` accepted. The analysis carries levels as confidences, `1 - alpha`,
    /// which is 1 for an alpha below about 1e-16 (a level of 0 that no interval has); this floor
    /// keeps `alpha / treatments` far from that for any number of arms a definition can hold.
    /// Checked when an experiment is created (`ExperimentStore.create`), not among `problems`,
    /// which every stored definition is decoded with.
    public static let smallestAlpha = 1e-9
    public static let smallestAlphaProblem = "must be at least 1e-09 (a smaller level rounds to a confidence of 1)"

    /// Whether `id` is one an experiment can have (`id`'s rule): anything else names none.
    public static func isValidID(_ id: String) -> Bool { isSlug(id) }

    static func isSlug(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 100 else { return false }
        var previousWasSeparator = true // no separator first
        for b in bytes {
            let isAlphanumeric = (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
            if isAlphanumeric {
                previousWasSeparator = false
            } else if (b == UInt8(ascii: "-") || b == UInt8(ascii: "_")) && !previousWasSeparator {
                previousWasSeparator = true
            } else {
                return false
            }
        }
        return !previousWasSeparator
    }
}
