import Foundation
import Testing
@testable import EngageCore

/// CUPED in the experiment analysis: from the analysis' own inputs (per-device counts in each arm,
/// notifications in the pre-period window) to gbstats' figures (scripts/gbstats-vectors.py,
/// `cuped_analysis`), and the definition's `cuped` field.
@Suite struct ExperimentCupedTests {
    static let now = Timestamp(rfc3339: "2026-03-10T12:00:00Z")!

    /// The rows `[x, n, x', n']` of a case as the analysis receives them: `n` displayed
    /// notifications of which `x` opened during the experiment (one undisplayed notification for
    /// a device with none displayed), and `n'` displayed of which `x'` opened in the window.
    static func inputs(_ vector: VectorCase, _ definition: ExperimentDefinition)
        -> (tallies: ExperimentTallies, covariates: ExperimentCovariates) {
        var tallies = ExperimentTallies(definition: definition)
        var covariates = ExperimentCovariates(days: 14, before: definition.startAt!)
        for (index, arm) in vector.arms.enumerated() {
            let name = definition.arms[index].name
            for (number, row) in arm.devices!.enumerated() {
                let device = "\(name)-\(number)"
                let (x, n, xPre, nPre) = (Int(row[0]), Int(row[1]), Int(row[2]), Int(row[3]))
                tallies.record(arm: name, device: device, FunnelCounts([
                    .notifications: max(n, 1), .delivered: max(n, 1), .displayed: n, .opened: x]))
                covariates.add(device: device, reached: [.notifications, .delivered, .displayed, .opened], count: xPre)
                covariates.add(device: device, reached: [.notifications, .delivered, .displayed], count: nPre - xPre)
            }
        }
        return (tallies, covariates)
    }

    static func definition(_ vector: VectorCase) -> ExperimentDefinition {
        var definition = ExperimentDefinition.sample(arms: vector.arms.indices.map { index in
            index == 0 ? ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true)
                : ExperimentArmDefinition(name: "treatment-\(index)", strategy: .adaptive, weight: 0.5)
        })
        definition.alpha = vector.alpha
        definition.analysis.sequentialTuning = vector.tuning
        definition.guardrails = []
        return definition
    }

    @Test func analysisEqualsGbstats() throws {
        var parity = GbstatsParity()
        let cases = ExperimentStatisticsFixture.shared.cupedAnalysis
        #expect(cases.count >= 2)
        for vector in cases {
            #expect(vector.metric == ExperimentMetric.open.rawValue)
            let definition = Self.definition(vector)
            let (tallies, covariates) = Self.inputs(vector, definition)
            let result = ExperimentAnalysis.run(definition: definition, tallies: tallies, covariates: covariates, now: Self.now)
            #expect(result.cupedWindow?.days == 14 && result.cupedWindow?.to == definition.startAt)
            for expected in vector.results {
                let context = "\(vector.name) arm \(expected.arm)"
                let comparison = try #require(result.comparisons[expected.arm - 1].metrics.first)
                let cuped = try #require(comparison.cuped, "\(context): no CUPED result")
                parity.check("theta", cuped.theta, try #require(expected.theta), context)
                for scale in expected.scales {
                    let label = "\(context) \(scale.scale)"
                    switch scale.scale {
                    case "absolute", "relative":
                        let lift = try #require(scale.scale == "absolute" ? comparison.absolute : comparison.relative)
                        Self.check(lift, scale, label, &parity)
                        let reduction = scale.scale == "absolute" ? cuped.absoluteVarianceReduction
                            : cuped.relativeVarianceReduction
                        parity.check("variance reduction", reduction ?? .nan, try #require(scale.varianceReduction), label)
                    default:
                        let lift = try #require(comparison.logRatio)
                        parity.check("estimate", lift.logEstimate, try #require(scale.estimate), label)
                        parity.check("standard error", lift.logStandardError, try #require(scale.se), label)
                        parity.check("degrees of freedom", lift.degreesOfFreedom, try #require(scale.dof), label)
                        parity.check("fixed p", lift.fixedHorizon.pValue, scale.fixedP, label, lossy: true)
                        parity.check("fixed interval", log1p(lift.fixedHorizon.interval.lower), scale.fixedLo, label)
                        parity.check("fixed interval", log1p(lift.fixedHorizon.interval.upper), scale.fixedHi, label)
                        let sequential = try #require(lift.sequential)
                        parity.check("sequential p", sequential.pValue, scale.seqP, label, lossy: true)
                        parity.check("sequential interval", log1p(sequential.interval.lower), scale.seqLo, label)
                        parity.check("sequential interval", log1p(sequential.interval.upper), scale.seqHi, label)
                        parity.check("variance reduction", cuped.varianceReduction ?? .nan,
                                     try #require(scale.varianceReduction), label)
                    }
                }
            }
        }
        parity.expectAgreement(label: "cuped_analysis")
    }

    private static func check(_ lift: ExperimentLiftResult, _ expected: VectorScale, _ context: String,
                              _ parity: inout GbstatsParity) {
        parity.check("estimate", lift.estimate, expected.estimate ?? .nan, context)
        parity.check("standard error", lift.standardError, expected.se ?? .nan, context)
        parity.check("degrees of freedom", lift.degreesOfFreedom, expected.dof ?? .nan, context)
        parity.check("fixed p", lift.fixedHorizon.pValue, expected.fixedP, context, lossy: true)
        parity.check("fixed interval", lift.fixedHorizon.interval.lower, expected.fixedLo, context)
        parity.check("fixed interval", lift.fixedHorizon.interval.upper, expected.fixedHi, context)
        parity.check("sequential p", lift.sequential?.pValue ?? .nan, expected.seqP, context, lossy: true)
        parity.check("sequential interval", lift.sequential?.interval.lower ?? .nan, expected.seqLo, context)
        parity.check("sequential interval", lift.sequential?.interval.upper ?? .nan, expected.seqHi, context)
        parity.check("chance to win", lift.chanceToWin, expected.ctw ?? .nan, context, lossy: true)
        parity.check("credible interval", lift.credibleInterval.lower, expected.bayesLo ?? .nan, context)
        parity.check("credible interval", lift.credibleInterval.upper, expected.bayesHi ?? .nan, context)
        parity.check("risk", lift.controlRisk, expected.riskCtrl ?? .nan, context, lossy: true)
        parity.check("risk", lift.treatmentRisk, expected.riskTrt ?? .nan, context, lossy: true)
    }

    @Test func withoutCovariatesNothingIsAdjusted() throws {
        let vector = ExperimentStatisticsFixture.shared.cupedAnalysis[0]
        let definition = Self.definition(vector)
        let (tallies, covariates) = Self.inputs(vector, definition)
        let plain = ExperimentAnalysis.run(definition: definition, tallies: tallies, now: Self.now)
        let adjusted = ExperimentAnalysis.run(definition: definition, tallies: tallies, covariates: covariates, now: Self.now)
        #expect(plain.cupedWindow == nil && plain.comparisons[0].metrics[0].cuped == nil)
        let before = try #require(plain.comparisons[0].metrics[0].logRatio?.sequential?.interval)
        let after = try #require(adjusted.comparisons[0].metrics[0].logRatio?.sequential?.interval)
        // A persistent propensity seen in the pre-period: the adjusted interval is narrower.
        #expect(after.upper - after.lower < before.upper - before.lower)
        // As-treated comparisons are never adjusted.
        #expect(adjusted.asTreated.metrics.allSatisfy { $0.cuped == nil })
        #expect(String(decoding: plain.canonicalJSON, as: UTF8.self).contains("\"cuped\":null"))
        #expect(String(decoding: adjusted.canonicalJSON, as: UTF8.self).contains("\"variance_reduction\":"))
    }

    @Test func devicesWithoutHistoryKeepCovariateZero() {
        var definition = ExperimentDefinition.sample()
        definition.guardrails = []
        var tallies = ExperimentTallies(definition: definition)
        var covariates = ExperimentCovariates(days: 7, before: definition.startAt!)
        for i in 0..<3 {
            tallies.record(arm: "control", device: "c\(i)", FunnelCounts([.notifications: 2, .displayed: 2, .opened: i % 2]))
            tallies.record(arm: "treatment", device: "t\(i)", FunnelCounts([.notifications: 2, .displayed: 2, .opened: 1]))
        }
        covariates.add(device: "c0", reached: [.notifications, .displayed, .opened], count: 3)
        let moments = tallies.arm(named: "control")!.adjustedMoments(.open, covariates: covariates)
        #expect(moments.post.devices == 3 && moments.pre.devices == 3)
        #expect(moments.pre.numeratorSum == 3 && moments.pre.denominatorSum == 3)
        #expect(covariates.from == Timestamp(rfc3339: "2026-02-22T00:00:00Z"))
    }

    @Test func definitionField() throws {
        let json = { (cuped: String) in
            #"{"id": "e", "app_id": "demo", "primary_metric": "open", "arms": [{"name": "a", "strategy": "full", "weight": 0.5, "control": true}, {"name": "b", "strategy": "adaptive", "weight": 0.5}], "analysis": {"cuped": "# + cuped + "}}"
        }
        func parse(_ cuped: String) throws -> ExperimentDefinition {
            try ExperimentDefinition(json: Array(json(cuped).utf8))
        }
        #expect(try parse("\"off\"").analysis.cupedPrePeriodDays == nil)
        #expect(try parse("{\"pre_period_days\": 28}").analysis.cupedPrePeriodDays == 28)
        #expect(try parse("{}").analysis.cupedPrePeriodDays == 14)
        #expect(ExperimentDefinition.sample().analysis.cupedPrePeriodDays == 14)
        for (bad, field) in [("\"on\"", "analysis.cuped"), ("3", "analysis.cuped"),
                             ("{\"pre_period_days\": 1.5}", "analysis.cuped.pre_period_days"),
                             ("{\"days\": 3}", "analysis.cuped.days")] {
            #expect(throws: ExperimentProblem.self) { try parse(bad) }
            do { _ = try parse(bad) } catch let problem as ExperimentProblem { #expect(problem.field == field, "\(bad)") }
        }
        for days in [0, -3, 400] {
            do {
                _ = try parse("{\"pre_period_days\": \(days)}")
                Issue.record("\(days) days accepted")
            } catch let problem as ExperimentProblem {
                #expect(problem.field == "cuped.pre_period_days" && problem.problem == "must lie in [1, 366]")
            }
        }
        var definition = try parse("{\"pre_period_days\": 366}")
        // The canonical JSON carries the setting both ways and reads back equal.
        for days in [nil, 21] as [Int?] {
            definition.analysis.cupedPrePeriodDays = days
            #expect(try ExperimentDefinition(json: definition.canonicalJSON) == definition)
        }
    }

    @Test func summaryTextShowsTheVarianceReduction() throws {
        let vector = ExperimentStatisticsFixture.shared.cupedAnalysis[0]
        let definition = Self.definition(vector)
        let (tallies, covariates) = Self.inputs(vector, definition)
        let result = ExperimentAnalysis.run(definition: definition, tallies: tallies, covariates: covariates, now: Self.now)
        let reduction = try #require(result.comparisons[0].metrics[0].cuped?.varianceReduction)
        let run = ExperimentSummaryText.LatestRun(runID: 7, scheduledFor: Self.now, decisionCode: "continue",
                                                  result: result.canonicalJSON)
        #expect(run.varianceReductions == ["treatment-1 open \((reduction * 1000).rounded() / 10)%"])
        let text = ExperimentSummaryText(definition: definition, latestRun: run, lifecycle: []).render()
        #expect(text.contains("  cuped:       pre-period 14 days before start"))
        #expect(text.contains("  CUPED:       variance reduction treatment-1 open "))
        var off = definition
        off.analysis.cupedPrePeriodDays = nil
        #expect(ExperimentSummaryText(definition: off, latestRun: nil, lifecycle: []).render().contains("  cuped:       off"))
    }

    /// Every treatment device opened its one notification: the arm has no spread of its own.
    /// Without CUPED that is not enough data (zero variance); with it the adjusted variance was
    /// theta^2 Var(pre) alone, the covariate's, and the experiment shipped on it.
    @Test func anArmWhoseDevicesAreAllAlikeIsNotEnoughDataWithCupedToo() throws {
        var definition = ExperimentDefinition.sample(arms: [
            ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
            ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)])
        definition.guardrails = []
        definition.analysis.minimumDevicesPerArm = 100
        var tallies = ExperimentTallies(definition: definition)
        var covariates = ExperimentCovariates(days: 14, before: definition.startAt!)
        for arm in ["control", "treatment"] {
            for number in 0..<200 {
                let device = "\(arm)-\(number)"
                let opened = arm == "treatment" || number < 100
                tallies.record(arm: arm, device: device, FunnelCounts([.notifications: 1, .delivered: 1, .displayed: 1, .opened: opened ? 1 : 0]))
                // The pre-period follows the outcome in control and alternates in treatment: theta is not 0.
                let openedBefore = arm == "control" ? opened : number % 2 == 0
                covariates.add(device: device, reached: openedBefore ? [.notifications, .delivered, .displayed, .opened]
                                                                     : [.notifications, .delivered, .displayed], count: 1)
            }
        }
        let without = ExperimentAnalysis.run(definition: definition, tallies: tallies, now: Self.now)
        let with = ExperimentAnalysis.run(definition: definition, tallies: tallies, covariates: covariates, now: Self.now)
        let plain = try #require(without.comparisons.first?.metrics.first)
        let adjusted = try #require(with.comparisons.first?.metrics.first)
        #expect(plain.unavailable == StatisticsError.Code.zeroVariance.rawValue)
        let cuped = try #require(adjusted.cuped)
        #expect(cuped.theta != 0, "\(cuped.theta)")
        #expect(adjusted.unavailable == StatisticsError.Code.zeroVariance.rawValue, "\(adjusted)")
        #expect(adjusted.logRatio == nil && adjusted.relative == nil)
        #expect(with.decision == without.decision, "\(with.decision): \(with.rationale)")
        #expect(with.decision == .continue, "\(with.decision): \(with.rationale)")
    }
}

/// `ExperimentCupedSimulation`, which `engage bench cuped` runs at full size.
@Suite struct ExperimentCupedSimulationTests {
    @Test func thePropensityMakesCupedNarrowAndNothingElseChanges() async {
        let simulation = ExperimentCupedSimulation(devices: 2_000, looks: 6, preLooks: 12)
        let summary = await simulation.run(experiments: 6, workers: 2)
        #expect(summary.experiments == 6)
        #expect(summary.medianVarianceReduction > 0.2 && summary.medianWidthRatio < 0.9, "\(summary)")
        #expect(abs(summary.medianWidthRatio - (1 - summary.medianVarianceReduction).squareRoot()) < 0.1, "\(summary)")
        // The same seeds give the same figures, whatever the workers.
        #expect(await simulation.run(experiments: 6, workers: 1) == summary)
        // Without a persistent propensity or pre-period traffic there is nothing to find.
        let none = await ExperimentCupedSimulation(devices: 2_000, looks: 6, preLooks: 0).run(experiments: 2)
        #expect(none.medianVarianceReduction == 0 && none.medianWidthRatio == 1, "\(none)")
    }

    @Test func mediansOfShippingLooksCountNeverAsOneMoreThanTheLooks() {
        typealias Outcome = ExperimentCupedSimulation.Outcome
        let outcomes = [Outcome(widthRatio: 0.5, varianceReduction: 0.7, shipLookWithCuped: 2, shipLookWithout: 5),
                        Outcome(widthRatio: 0.7, varianceReduction: 0.5, shipLookWithCuped: nil, shipLookWithout: nil),
                        Outcome(widthRatio: 0.6, varianceReduction: 0.6, shipLookWithCuped: 3, shipLookWithout: nil)]
        let summary = ExperimentCupedSimulation.Summary(outcomes, looks: 10)
        #expect(summary.medianWidthRatio == 0.6 && summary.medianVarianceReduction == 0.6)
        #expect(summary.shippedWithCuped == 2 && summary.shippedWithout == 1)
        #expect(summary.medianShipLookWithCuped == 3 && summary.medianShipLookWithout == 11)
        #expect(summary.medianLooksEarlier == 3)
    }
}
