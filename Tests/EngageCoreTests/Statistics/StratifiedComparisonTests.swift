import Foundation
import SeededRandom
import Testing
@testable import EngageCore

@Suite struct StratifiedComparisonTests {
    static func comparison(_ entries: [StatsmodelsStratifiedFile.StratumEntry]) throws -> StratifiedComparison {
        StratifiedComparison(strata: try entries.map { entry in
            Stratum(name: entry.name,
                    variant: try Proportion(successes: entry.variant[0], trials: entry.variant[1]),
                    control: try Proportion(successes: entry.control[0], trials: entry.control[1]))
        })
    }

    static func comparison(_ entries: [SharedStratifiedFile.Entry]) throws -> StratifiedComparison {
        StratifiedComparison(strata: try entries.map { entry in
            Stratum(name: entry.category,
                    variant: try Proportion(successes: entry.rich.successes, trials: entry.rich.displayed),
                    control: try Proportion(successes: entry.plain.successes, trials: entry.plain.displayed))
        })
    }

    @Test func sharedVectorRiskRatioAndCMHAgreeWithStatsmodels() throws {
        let file = try decodeFixture(SharedStratifiedFile.self, from: StratifiedSharedVectors.json, snakeCase: false)
        let vector = file.stratified
        let comparison = try Self.comparison(vector.strata)
        var parity = Parity()
        let ratio = try comparison.mantelHaenszelRiskRatio()
        parity.check("MH risk ratio", ratio.estimate, vector.mantelHaenszelRiskRatio.statsmodels, relative: 1e-12)
        parity.check("GR se(log RR)", ratio.greenlandRobinsLogVariance.squareRoot(), vector.mantelHaenszelRiskRatio.seLogGreenlandRobins, relative: 1e-12)
        let ratioEffect = try ratio.greenlandRobinsEstimate()
        parity.check("MH RR interval", ratioEffect.interval.lower, vector.mantelHaenszelRiskRatio.ci95[0], relative: 1e-12)
        parity.check("MH RR interval", ratioEffect.interval.upper, vector.mantelHaenszelRiskRatio.ci95[1], relative: 1e-12)

        let cmh = try comparison.cochranMantelHaenszelTest()
        parity.check("CMH statistic", cmh.statistic, vector.cmh.statistic, relative: 1e-12)
        parity.check("CMH p", cmh.pValue, vector.cmh.pValue, relative: 1e-12)
        parity.check("CMH p (statsmodels)", cmh.pValue, vector.cmh.statsmodels, relative: 1e-12)

        let difference = try comparison.mantelHaenszelRiskDifference()
        parity.check("MH RD", difference.estimate, vector.mantelHaenszelRiskDifference.estimate, relative: 1e-13)
        parity.check("Sato se(RD)", difference.satoVariance.squareRoot(), vector.mantelHaenszelRiskDifference.seSato, relative: 1e-13)
        let differenceEffect = try difference.satoEstimate()
        parity.check("MH RD interval", differenceEffect.interval.lower, vector.mantelHaenszelRiskDifference.ci95[0], relative: 1e-12)
        parity.check("MH RD interval", differenceEffect.interval.upper, vector.mantelHaenszelRiskDifference.ci95[1], relative: 1e-12)

        let breslowDay = try comparison.breslowDayTest()
        parity.check("Breslow-Day p", breslowDay.test.pValue, vector.breslowDayP, relative: 1e-12)

        let crude = comparison.crude
        parity.check("crude", crude.variant.rate, vector.crudePooled.richRate, relative: 1e-15)
        parity.check("crude", crude.control.rate, vector.crudePooled.plainRate, relative: 1e-15)
        parity.check("crude", crude.absoluteDifference, vector.crudePooled.difference, relative: 1e-15)
        print("shared stratified vector, largest relative error:\n\(parity.summary)")
    }

    @Test func crudeAndAdjustedDisagreeInTheSharedVector() throws {
        // The vector is built as Simpson's paradox: rich looks worse pooled, and is not once
        // categories are held fixed.
        let file = try decodeFixture(SharedStratifiedFile.self, from: StratifiedSharedVectors.json, snakeCase: false)
        let comparison = try Self.comparison(file.stratified.strata)
        let crude = try comparison.crude.ratioEstimate()
        let adjusted = try comparison.mantelHaenszelRiskRatio().greenlandRobinsEstimate()
        #expect(crude.estimate < 1 && crude.isSignificant)
        #expect(adjusted.estimate > 1 && !adjusted.isSignificant)
        let disagreement = try #require(CrudeAdjustedDisagreement(crude: crude, adjusted: adjusted))
        #expect(disagreement.direction && disagreement.significance)
        #expect(CrudeAdjustedDisagreement(crude: adjusted, adjusted: adjusted) == nil)
    }

    @Test func statsmodelsVectors() throws {
        let file = try decodeFixture(StatsmodelsStratifiedFile.self, from: StratifiedStatsmodelsVectors.json)
        var parity = Parity()
        for vector in file.stratified {
            let comparison = try Self.comparison(vector.strata)
            #expect(comparison.excluded.map(\.name) == vector.excluded.map(\.name), "\(vector.name)")
            #expect(comparison.excluded.map(\.reason.rawValue) == vector.excluded.map(\.reason), "\(vector.name)")

            let difference = try comparison.mantelHaenszelRiskDifference()
            parity.check("MH RD", difference.estimate, vector.mhRd.estimate, relative: 1e-12, vector.name)
            parity.check("Sato Var(RD)", difference.satoVariance, vector.mhRd.satoVariance, relative: 1e-12, vector.name)
            parity.check("GR Var(RD)", difference.greenlandRobinsVariance, vector.mhRd.greenlandRobinsVariance, relative: 1e-12, vector.name)

            let ratio = try comparison.mantelHaenszelRiskRatio()
            parity.check("MH RR", ratio.estimate, vector.mhRr.estimate, relative: 1e-12, vector.name)
            parity.check("GR Var(log RR)", ratio.greenlandRobinsLogVariance, vector.mhRr.greenlandRobinsLogVariance, relative: 1e-12, vector.name)
            parity.check("large-strata Var(log RR)", ratio.largeStrataLogVariance, vector.mhRr.largeStrataLogVariance, relative: 1e-12, vector.name)

            let cmh = try comparison.cochranMantelHaenszelTest()
            parity.check("CMH statistic", cmh.statistic, vector.cmh.statistic, relative: 1e-11, vector.name)
            parity.check("CMH p", cmh.pValue, vector.cmh.pValue, relative: 1e-11, vector.name)
            let corrected = try comparison.cochranMantelHaenszelTest(continuityCorrection: true)
            parity.check("CMH corrected statistic", corrected.statistic, vector.cmh.correctedStatistic, relative: 1e-11, vector.name)
            parity.check("CMH corrected p", corrected.pValue, vector.cmh.correctedPValue, relative: 1e-11, vector.name)

            if let expected = vector.breslowDay {
                let test = try comparison.breslowDayTest()
                parity.check("Breslow-Day statistic", test.test.statistic, expected.statistic, relative: 1e-11, vector.name)
                parity.check("Breslow-Day p", test.test.pValue, expected.pValue, relative: 1e-11, vector.name)
                #expect(test.test.degreesOfFreedom == Double(expected.degreesOfFreedom))
                #expect(test.excluded.map(\.name) == expected.excluded, "\(vector.name)")
                let tarone = try comparison.breslowDayTest(taroneAdjustment: true)
                parity.check("Breslow-Day-Tarone statistic", tarone.test.statistic, expected.taroneStatistic, relative: 1e-11, vector.name)
                parity.check("Breslow-Day-Tarone p", tarone.test.pValue, expected.taronePValue, relative: 1e-11, vector.name)
            } else {
                #expect(throws: StatisticsError.self) { try comparison.breslowDayTest() }
            }

            if let expected = vector.cochranQ {
                for (scale, reference) in [(ComparisonScale.difference, expected.difference), (.ratio, expected.ratio)] {
                    let test = try comparison.cochranQ(scale)
                    parity.check("Cochran Q \(scale)", test.test.statistic, reference.statistic, relative: 1e-11, vector.name)
                    parity.check("Cochran Q \(scale) p", test.test.pValue, reference.pValue, relative: 1e-11, vector.name)
                    #expect(test.test.degreesOfFreedom == Double(reference.degreesOfFreedom))
                }
            } else {
                #expect(throws: StatisticsError(.tooFewStrata)) { try comparison.cochranQ(.difference) }
            }
        }
        print("statsmodels stratified vectors, largest relative error:\n\(parity.summary)")
    }

    @Test func noStratumWithBothGroupsIsNotEnoughData() throws {
        let comparison = StratifiedComparison(strata: [
            Stratum(name: "a", variant: try Proportion(successes: 0, trials: 0), control: try Proportion(successes: 3, trials: 10)),
            Stratum(name: "b", variant: try Proportion(successes: 2, trials: 5), control: try Proportion(successes: 0, trials: 0)),
            Stratum(name: "c", variant: try Proportion(successes: 0, trials: 0), control: try Proportion(successes: 0, trials: 0)),
        ])
        #expect(comparison.included.isEmpty)
        #expect(comparison.excluded == [
            ExcludedStratum(name: "a", reason: .noVariantTrials),
            ExcludedStratum(name: "b", reason: .noControlTrials),
            ExcludedStratum(name: "c", reason: .noTrials),
        ])
        #expect(throws: StatisticsError(.tooFewStrata)) { try comparison.mantelHaenszelRiskDifference() }
        #expect(throws: StatisticsError(.tooFewStrata)) { try comparison.mantelHaenszelRiskRatio() }
        #expect(throws: StatisticsError(.tooFewStrata)) { try comparison.cochranMantelHaenszelTest() }
        #expect(throws: StatisticsError(.tooFewStrata)) { try comparison.breslowDayTest() }
        #expect(throws: StatisticsError(.tooFewStrata)) { try comparison.cochranQ(.ratio) }
        #expect(StratifiedComparison(strata: []).excluded.isEmpty)
        #expect(throws: StatisticsError(.tooFewStrata)) { try StratifiedComparison(strata: []).mantelHaenszelRiskRatio() }
        #expect(StatisticsError(.tooFewStrata).description == "too few strata have trials in both groups")
    }

    @Test func degenerateDataThrowsNamedErrors() throws {
        func single(_ x1: Int, _ n1: Int, _ x2: Int, _ n2: Int) throws -> StratifiedComparison {
            StratifiedComparison(strata: [Stratum(name: "s", variant: try Proportion(successes: x1, trials: n1),
                                                  control: try Proportion(successes: x2, trials: n2))])
        }
        #expect(throws: StatisticsError(.zeroBaseline)) { try single(3, 10, 0, 10).mantelHaenszelRiskRatio() }
        let noVariantSuccesses = try single(0, 10, 4, 10).mantelHaenszelRiskRatio()
        #expect(noVariantSuccesses.estimate == 0)
        #expect(throws: StatisticsError(.undefinedLogRatio)) { try noVariantSuccesses.greenlandRobinsEstimate() }
        #expect(throws: StatisticsError(.zeroVariance)) { try single(0, 10, 0, 10).cochranMantelHaenszelTest() }
        #expect(throws: StatisticsError(.zeroVariance)) { try single(0, 10, 0, 10).mantelHaenszelRiskDifference().satoEstimate() }
    }

    @Test func continuityCorrectionIsSkippedWhenItWouldOvershoot() throws {
        // x1 = 3 of 6 against x2 = 2 of 5: U = 3 - 6 * 5 / 11, about 0.27.
        let comparison = StratifiedComparison(strata: [
            Stratum(name: "s", variant: try Proportion(successes: 3, trials: 6), control: try Proportion(successes: 2, trials: 5)),
        ])
        let deviation = 3 - 6.0 * 5 / 11
        #expect(abs(deviation) < 0.5)
        let variance = 6.0 * 5 * 5 * 6 / (11 * 11 * 10)
        let plain = try comparison.cochranMantelHaenszelTest()
        let corrected = try comparison.cochranMantelHaenszelTest(continuityCorrection: true)
        #expect(matches(plain.statistic, deviation * deviation / variance, relative: 1e-14))
        #expect(corrected == plain)
    }

    @Test func breslowDayExpectationWithACommonOddsRatioOfOne() {
        // With OR = 1 the quadratic is linear: E = n1 m1 / N.
        let table = StratumTable(x1: 3, n1: 10, x2: 7, n2: 14)
        let expected = StratifiedComparison.expectedVariantSuccesses(table, oddsRatio: 1)
        #expect(matches(expected, 10.0 * 10 / 24, relative: 1e-15))
        // And it satisfies the odds-ratio equation otherwise.
        for oddsRatio in [0.01, 0.3, 2.5, 40] {
            let e = StratifiedComparison.expectedVariantSuccesses(table, oddsRatio: oddsRatio)
            let m1 = table.successes
            #expect(matches(e * (table.n2 - m1 + e) / ((table.n1 - e) * (m1 - e)), oddsRatio, relative: 1e-12))
            #expect(e >= 0 && e <= min(table.n1, m1))
        }
    }

    @Test func everySummaryIsFiniteOrANamedError() throws {
        var generator = SplitMix64(seed: 16)
        // Per summary, the rounds it answered: one that threw for every input would pass the
        // checks below untested.
        var answered = Array(repeating: 0, count: 10)
        for _ in 0..<1500 {
            let strata = try (0..<Int.random(in: 0...5, using: &generator)).map { index in
                let n1 = Int.random(in: 0...[0, 1, 3, 40, 5000].randomElement(using: &generator)!, using: &generator)
                let n2 = Int.random(in: 0...[0, 1, 3, 40, 5000].randomElement(using: &generator)!, using: &generator)
                let x1 = [0, n1, Int.random(in: 0...n1, using: &generator)].randomElement(using: &generator)!
                let x2 = [0, n2, Int.random(in: 0...n2, using: &generator)].randomElement(using: &generator)!
                return Stratum(name: "s\(index)", variant: try Proportion(successes: x1, trials: n1),
                               control: try Proportion(successes: x2, trials: n2))
            }
            let comparison = StratifiedComparison(strata: strata)
            let confidence = [0.9, 0.95, 0.99].randomElement(using: &generator)!
            func check(_ index: Int, _ effect: () throws -> EffectEstimate) {
                guard let effect = try? effect() else { return }
                answered[index] += 1
                #expect(effect.estimate.isFinite && effect.interval.lower.isFinite && effect.interval.upper.isFinite, "\(strata)")
                #expect(effect.interval.lower <= effect.estimate && effect.estimate <= effect.interval.upper, "\(strata)")
                #expect(effect.pValue >= 0 && effect.pValue <= 1, "\(strata)")
                #expect(effect.relativeInterval.lower >= -1 && effect.interval.upper <= (effect.scale == .ratio ? .infinity : 1), "\(strata)")
                // One method per row: significance read off the interval agrees with the p-value.
                #expect(effect.isSignificant == (effect.pValue < 1 - confidence), "\(strata)")
            }
            check(0) { try comparison.mantelHaenszelRiskDifference().satoEstimate(confidence: confidence) }
            check(1) { try comparison.mantelHaenszelRiskDifference().greenlandRobinsEstimate(confidence: confidence) }
            check(2) { try comparison.mantelHaenszelRiskRatio().greenlandRobinsEstimate(confidence: confidence) }
            check(3) { try comparison.mantelHaenszelRiskRatio().largeStrataEstimate(confidence: confidence) }
            let tests: [() throws -> ChiSquareTest] = [
                { try comparison.cochranMantelHaenszelTest() },
                { try comparison.cochranMantelHaenszelTest(continuityCorrection: true) },
                { try comparison.breslowDayTest().test },
                { try comparison.breslowDayTest(taroneAdjustment: true).test },
                { try comparison.cochranQ(.difference).test },
                { try comparison.cochranQ(.ratio).test },
            ]
            for (index, test) in tests.enumerated() {
                guard let result = try? test() else { continue }
                answered[4 + index] += 1
                #expect(result.statistic.isFinite && result.pValue >= 0 && result.pValue <= 1, "\(strata)")
            }
        }
        #expect(answered.allSatisfy { $0 >= 100 }, "\(answered)")
    }
}
