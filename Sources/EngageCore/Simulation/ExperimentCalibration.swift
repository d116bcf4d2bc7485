import Foundation

/// Simulated A/A experiments (every arm the same) analysed by `ExperimentAnalysis` after every
/// hour, counting the two false decisions separately, because they fall on opposite sides:
///
/// - a false SHIP: some look decides `ship` (the primary metric, `open`, looks better on the
///   upper side), counted once per experiment;
/// - a false guardrail BLOCK: some look finds the guardrail (`expansion`, must not decrease)
///   significantly worse on the lower side, counted once per treatment arm.
///
/// Each is a one-sided error whose nominal rate is `alpha / 2` (the ship side with the
/// Bonferroni split over the treatments, the guardrail per arm), so a calibrated analysis keeps
/// the Clopper-Pearson 95% upper bound of each rate at or below `alpha / 2` (`Summary`).
///
/// Traffic: every device keeps a log-odds propensity for the whole run (`DevicePropensity`), so
/// its notifications are correlated, and receives a push in an hour with its own probability
/// (uniform in [0.1, 0.9]), so devices carry different numbers of notifications; a displayed
/// push (95%) is expanded, opened and dismissed at the device's own rates. Arms are assigned by
/// the experiment's GrowthBook hash with a seed of each experiment's own. Rates this low, with a
/// dozen notifications a device, make the sampling distribution of a ratio of means skewed: the
/// situation where a symmetric delta-method interval of the relative lift errs on one side.
public struct ExperimentCalibration: Sendable {
    /// Number of arms, the first the control, equal weights.
    public var arms: Int
    /// Devices in the whole experiment.
    public var devices: Int
    /// Hourly analyses.
    public var looks: Int
    /// N* of the sequential test, in devices of a comparison (control plus one treatment).
    public var tuning: Double
    public var propensity: DevicePropensity
    /// The configured rates of a device without propensity.
    public var rates: EngagementRates
    public var alpha: Double

    public init(arms: Int, devices: Int, looks: Int, tuning: Double? = nil,
                propensity: DevicePropensity = DevicePropensity(spread: 1),
                rates: EngagementRates = EngagementRates(expanded: 0.12, actioned: 0, opened: 0.08, dismissed: 0.2),
                alpha: Double = 0.05) {
        precondition(arms >= 2 && devices >= arms && looks >= 1, "an A/A calibration needs arms, devices and looks")
        self.arms = arms
        self.devices = devices
        self.looks = looks
        // By default tuned for the devices of one comparison at the end.
        self.tuning = tuning ?? Double(devices * 2 / arms)
        self.propensity = propensity
        self.rates = rates
        self.alpha = alpha
    }

    /// What one A/A experiment did wrong.
    public struct Outcome: Sendable, Equatable {
        /// The first look that decided `ship`, nil when none did.
        public var falseShipLook: Int?
        /// Treatment arms whose guardrail was violated at some look.
        public var falselyBlockedArms: Int
        public var treatments: Int
    }

    /// The definition each experiment is analysed under; its hash seed is the experiment's own.
    public func definition(seed: UInt64) -> ExperimentDefinition {
        let weight = 1 / Double(arms)
        let armDefinitions = (0..<arms).map { index in
            ExperimentArmDefinition(name: index == 0 ? "control" : "treatment\(index)", strategy: .full,
                                    weight: weight, isControl: index == 0)
        }
        return ExperimentDefinition(
            id: "calibration", appID: "calibration", arms: armDefinitions, hashSeed: "calibration-\(seed)",
            primaryMetric: .open, guardrails: [ExperimentGuardrail(.expansion, direction: .mustNotDecrease)],
            alpha: alpha, startAt: Timestamp(microsecondsSinceEpoch: 1_767_225_600_000_000), status: .running,
            analysis: ExperimentAnalysisSettings(sequentialTuning: tuning, minimumDevicesPerArm: 2))
    }

    public func run(seed: UInt64) -> Outcome {
        let definition = definition(seed: seed)
        let ranges = ExperimentAssignment.ranges(of: definition)
        struct Device { let id: String; let arm: String; let push: Double; let rates: EngagementRates }
        var random = SimulationRandom(seed: seed)
        var population: [Device] = []
        population.reserveCapacity(devices)
        for index in 0..<devices {
            let id = "d\(index)"
            guard let arm = ExperimentAssignment.variationIndex(forDevice: id, seed: definition.hashSeed, ranges: ranges)
            else { continue }
            let push = random.uniform(0.1, 0.9)
            let shift = propensity.shift(z: random.normal())
            population.append(Device(id: id, arm: definition.arms[arm].name, push: push,
                                     rates: DevicePropensity.rates(rates, shift: shift)))
        }
        var tallies = ExperimentTallies(definition: definition)
        var previous: [ExperimentRunResult] = []
        var outcome = Outcome(falseShipLook: nil, falselyBlockedArms: 0, treatments: arms - 1)
        var blocked = Set<String>()
        let start = definition.startAt!
        for look in 1...looks {
            for device in population where random.chance(device.push) {
                var reached: FunnelStageSet = [.notifications, .delivered]
                if random.chance(0.95) {
                    reached.insert(.displayed)
                    if random.chance(device.rates.expanded) { reached.insert(.expanded) }
                    if random.chance(device.rates.opened) { reached.insert(.opened) }
                    if random.chance(device.rates.dismissed) { reached.insert(.dismissed) }
                }
                tallies.record(arm: device.arm, device: device.id, FunnelCounts(reached: reached))
            }
            let now = start.adding(microseconds: Int64(look) * 3_600_000_000)
            let result = ExperimentAnalysis.run(definition: definition, tallies: tallies, previous: previous, now: now)
            if case .ship = result.decision, outcome.falseShipLook == nil { outcome.falseShipLook = look }
            for comparison in result.comparisons where comparison.metrics.contains(where: \.isGuardrailViolated) {
                blocked.insert(comparison.arm)
            }
            // The analysis needs only the number of earlier looks.
            previous.append(result)
        }
        outcome.falselyBlockedArms = blocked.count
        return outcome
    }

    /// The false decisions of many experiments, with their one-sided error bounds.
    public struct Summary: Sendable, Equatable, CustomStringConvertible {
        public var experiments = 0
        public var falseShips = 0
        /// Treatment arms over all experiments.
        public var armComparisons = 0
        public var falseBlocks = 0
        public var alpha: Double

        public init(alpha: Double) {
            self.alpha = alpha
        }

        public mutating func add(_ outcome: Outcome) {
            experiments += 1
            if outcome.falseShipLook != nil { falseShips += 1 }
            armComparisons += outcome.treatments
            falseBlocks += outcome.falselyBlockedArms
        }

        /// Clopper-Pearson 95% upper bound of the false ship rate.
        public var falseShipUpperBound: Double {
            Proportion(validatedSuccesses: falseShips, trials: experiments).clopperPearsonUpperBound()
        }

        /// Clopper-Pearson 95% upper bound of the false guardrail block rate, per arm.
        public var falseBlockUpperBound: Double {
            Proportion(validatedSuccesses: falseBlocks, trials: armComparisons).clopperPearsonUpperBound()
        }

        /// Each side's nominal one-sided rate.
        public var nominal: Double { alpha / 2 }

        public var isCalibrated: Bool {
            falseShipUpperBound <= nominal && falseBlockUpperBound <= nominal
        }

        public var description: String {
            func rate(_ x: Int, _ n: Int) -> String { String(format: "%d/%d = %.4f", x, n, n == 0 ? 0 : Double(x) / Double(n)) }
            return "false ship \(rate(falseShips, experiments)) (95% upper bound \(String(format: "%.4f", falseShipUpperBound))), "
                + "false guardrail block \(rate(falseBlocks, armComparisons)) (95% upper bound \(String(format: "%.4f", falseBlockUpperBound))), "
                + "nominal per side \(nominal)"
        }
    }

    /// Runs experiments with seeds `firstSeed ..< firstSeed + count` on `workers` concurrent tasks;
    /// the result does not depend on `workers`.
    public func run(experiments count: Int, firstSeed: UInt64 = 1, workers: Int = 2) async -> Summary {
        let outcomes = await withTaskGroup(of: [Outcome].self) { group in
            for worker in 0..<max(1, workers) {
                group.addTask {
                    stride(from: worker, to: count, by: max(1, workers)).map { self.run(seed: firstSeed + UInt64($0)) }
                }
            }
            var all: [Outcome] = []
            for await chunk in group { all += chunk }
            return all
        }
        var summary = Summary(alpha: alpha)
        for outcome in outcomes { summary.add(outcome) }
        return summary
    }
}
