import Foundation

/// What CUPED buys on simulated experiments with a true lift: each experiment's devices keep a
/// log-odds propensity (`DevicePropensity`) through a pre-period and the experiment, the
/// treatment multiplies every device's open rate by `1 + lift`, and the experiment is analysed
/// every hour twice, with the pre-period covariates and without. Per experiment it records the
/// ratio of the final sequential interval widths (log ratio of means, the scale decisions read),
/// CUPED's variance reduction, and the first look that ships under each analysis.
///
/// Traffic follows `ExperimentCalibration`'s: each device receives a push in an hour with its own
/// probability (uniform in [0.1, 0.9]), 95% are displayed, and a displayed push is opened at the
/// device's rate; the pre-period is `preLooks` such hours before the start, without the lift.
public struct ExperimentCupedSimulation: Sendable {
    public var devices: Int
    public var looks: Int
    public var preLooks: Int
    /// The true relative lift of the treatment's open rate.
    public var lift: Double
    public var propensity: DevicePropensity
    /// The open rate of a device without propensity.
    public var openRate: Double
    public var tuning: Double
    public var alpha: Double

    public init(devices: Int, looks: Int, preLooks: Int, lift: Double = 0.05,
                propensity: DevicePropensity = DevicePropensity(spread: 1), openRate: Double = 0.3,
                tuning: Double? = nil, alpha: Double = 0.05) {
        precondition(devices >= 2 && looks >= 1 && preLooks >= 0, "a simulation needs devices and looks")
        self.devices = devices
        self.looks = looks
        self.preLooks = preLooks
        self.lift = lift
        self.propensity = propensity
        self.openRate = openRate
        self.tuning = tuning ?? Double(devices)
        self.alpha = alpha
    }

    /// One experiment's figures.
    public struct Outcome: Sendable, Equatable {
        /// Final sequential interval width with CUPED over the width without.
        public var widthRatio: Double
        public var varianceReduction: Double
        /// The first look deciding `ship`, nil when none did.
        public var shipLookWithCuped: Int?
        public var shipLookWithout: Int?
    }

    func definition(seed: UInt64) -> ExperimentDefinition {
        ExperimentDefinition(
            id: "cuped", appID: "cuped",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)],
            hashSeed: "cuped-\(seed)", primaryMetric: .open, guardrails: [], alpha: alpha,
            startAt: Timestamp(microsecondsSinceEpoch: 1_767_225_600_000_000), status: .running,
            analysis: ExperimentAnalysisSettings(sequentialTuning: tuning, minimumDevicesPerArm: 2))
    }

    public func run(seed: UInt64) -> Outcome {
        let definition = definition(seed: seed)
        let ranges = ExperimentAssignment.ranges(of: definition)
        var random = SimulationRandom(seed: seed)
        struct Device { let id: String; let arm: String; let push: Double; let open: Double; let treatedOpen: Double }
        var population: [Device] = []
        for index in 0..<devices {
            let id = "d\(index)"
            guard let arm = ExperimentAssignment.variationIndex(forDevice: id, seed: definition.hashSeed, ranges: ranges)
            else { continue }
            let open = DevicePropensity.rates(EngagementRates(expanded: 0, actioned: 0, opened: openRate, dismissed: 0),
                                              shift: propensity.shift(z: random.normal())).opened
            population.append(Device(id: id, arm: definition.arms[arm].name, push: random.uniform(0.1, 0.9),
                                     open: open, treatedOpen: arm == 0 ? open : min(1, open * (1 + lift))))
        }
        func push(_ device: Device, treated: Bool) -> FunnelStageSet {
            var reached: FunnelStageSet = [.notifications, .delivered]
            if random.chance(0.95) {
                reached.insert(.displayed)
                if random.chance(treated ? device.treatedOpen : device.open) { reached.insert(.opened) }
            }
            return reached
        }
        var covariates = ExperimentCovariates(days: ExperimentAnalysisSettings.defaultCupedPrePeriodDays,
                                              before: definition.startAt!)
        for _ in 0..<preLooks {
            for device in population where random.chance(device.push) {
                covariates.add(device: device.id, reached: push(device, treated: false))
            }
        }
        var tallies = ExperimentTallies(definition: definition)
        var outcome = Outcome(widthRatio: .nan, varianceReduction: .nan, shipLookWithCuped: nil, shipLookWithout: nil)
        for look in 1...looks {
            for device in population where random.chance(device.push) {
                tallies.record(arm: device.arm, device: device.id, FunnelCounts(reached: push(device, treated: true)))
            }
            let now = definition.startAt!.adding(microseconds: Int64(look) * 3_600_000_000)
            let adjusted = ExperimentAnalysis.run(definition: definition, tallies: tallies, covariates: covariates, now: now)
            let plain = ExperimentAnalysis.run(definition: definition, tallies: tallies, now: now)
            if case .ship = adjusted.decision, outcome.shipLookWithCuped == nil { outcome.shipLookWithCuped = look }
            if case .ship = plain.decision, outcome.shipLookWithout == nil { outcome.shipLookWithout = look }
            if look == looks, let with = adjusted.comparisons.first?.metrics.first,
               let without = plain.comparisons.first?.metrics.first,
               let narrow = with.logRatio?.sequential?.interval, let wide = without.logRatio?.sequential?.interval {
                outcome.widthRatio = (narrow.upper - narrow.lower) / (wide.upper - wide.lower)
                outcome.varianceReduction = with.cuped?.varianceReduction ?? .nan
            }
        }
        return outcome
    }

    /// Medians over many experiments.
    public struct Summary: Sendable, Equatable, CustomStringConvertible {
        public var experiments = 0
        public var medianWidthRatio = Double.nan
        public var medianVarianceReduction = Double.nan
        /// Experiments shipped by some look.
        public var shippedWithCuped = 0
        public var shippedWithout = 0
        /// Of the shipping look, an experiment never shipped counting as `looks + 1`.
        public var medianShipLookWithCuped = Double.nan
        public var medianShipLookWithout = Double.nan
        /// Of the looks saved per experiment (without minus with, censored as above).
        public var medianLooksEarlier = Double.nan

        public init() {}

        public init(_ outcomes: [Outcome], looks: Int) {
            experiments = outcomes.count
            medianWidthRatio = Self.median(outcomes.map(\.widthRatio))
            medianVarianceReduction = Self.median(outcomes.map(\.varianceReduction))
            shippedWithCuped = outcomes.filter { $0.shipLookWithCuped != nil }.count
            shippedWithout = outcomes.filter { $0.shipLookWithout != nil }.count
            let with = outcomes.map { Double($0.shipLookWithCuped ?? looks + 1) }
            let without = outcomes.map { Double($0.shipLookWithout ?? looks + 1) }
            medianShipLookWithCuped = Self.median(with)
            medianShipLookWithout = Self.median(without)
            medianLooksEarlier = Self.median(zip(without, with).map { $0 - $1 })
        }

        /// NaNs (no interval at the last look) left out.
        static func median(_ values: [Double]) -> Double {
            let sorted = values.filter { !$0.isNaN }.sorted()
            guard !sorted.isEmpty else { return .nan }
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }

        public var description: String {
            String(format: "median sequential interval width with/without CUPED %.3f, median variance reduction %.3f; "
                + "shipped %d/%d with CUPED, %d/%d without; median ship look %.1f with, %.1f without (never = looks + 1); "
                + "median looks earlier %.1f",
                   medianWidthRatio, medianVarianceReduction, shippedWithCuped, experiments, shippedWithout, experiments,
                   medianShipLookWithCuped, medianShipLookWithout, medianLooksEarlier)
        }
    }

    /// Runs experiments with seeds `firstSeed ..< firstSeed + count` on `workers` concurrent
    /// tasks; the result does not depend on `workers`.
    public func run(experiments count: Int, firstSeed: UInt64 = 1, workers: Int = 2) async -> Summary {
        let outcomes = await withTaskGroup(of: [(Int, Outcome)].self) { group in
            for worker in 0..<max(1, workers) {
                group.addTask {
                    stride(from: worker, to: count, by: max(1, workers)).map { ($0, self.run(seed: firstSeed + UInt64($0))) }
                }
            }
            var all: [(Int, Outcome)] = []
            for await chunk in group { all += chunk }
            return all.sorted { $0.0 < $1.0 }.map(\.1)
        }
        return Summary(outcomes, looks: looks)
    }
}
