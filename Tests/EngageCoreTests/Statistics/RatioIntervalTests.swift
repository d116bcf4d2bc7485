import Foundation
import SeededRandom
import Testing
@testable import EngageCore

@Suite struct RatioIntervalTests {
    static func comparison(_ variant: [Int], _ control: [Int]) throws -> ProportionComparison {
        ProportionComparison(variant: try Proportion(successes: variant[0], trials: variant[1]),
                             control: try Proportion(successes: control[0], trials: control[1]))
    }

    @Test func sharedVectorRelativeIntervals() throws {
        let file = try decodeFixture(SharedStratifiedFile.self, from: StratifiedSharedVectors.json, snakeCase: false)
        var parity = Parity()
        for vector in file.relativeIntervals {
            let comparison = try Self.comparison(vector.rich, vector.plain)
            let log = try comparison.ratioEstimate(.katzLog)
            let score = try comparison.ratioEstimate(.miettinenNurminenScore)
            parity.check("relative lift", log.relativeLift, vector.relativeLift, relative: 1e-14)
            parity.check("Katz log interval", log.relativeInterval.lower, vector.log[0], relative: 1e-12)
            parity.check("Katz log interval", log.relativeInterval.upper, vector.log[1], relative: 1e-12)
            // statsmodels takes the score bounds from np.roots of Nam's cubic: about 1e-12.
            parity.check("MN score interval", score.relativeInterval.lower, vector.score[0], relative: 1e-10)
            parity.check("MN score interval", score.relativeInterval.upper, vector.score[1], relative: 1e-10)
            #expect(log.relativeInterval.lower > -1 && score.relativeInterval.lower > -1)
        }
        print("shared ratio vector, largest relative error:\n\(parity.summary)")
    }

    @Test func statsmodelsRatioVectors() throws {
        let file = try decodeFixture(StatsmodelsStratifiedFile.self, from: StratifiedStatsmodelsVectors.json)
        var parity = Parity()
        for vector in file.ratio {
            let comparison = try Self.comparison(vector.variant, vector.control)
            let context = "\(vector.variant) vs \(vector.control)"
            parity.check("ratio", try comparison.ratio(), vector.ratio, relative: 1e-15, context)
            if let expected = vector.katzLog {
                let effect = try comparison.ratioEstimate(.katzLog, confidence: file.confidence)
                parity.check("Katz log bounds", effect.interval.lower, expected.lower, relative: 1e-12, context)
                parity.check("Katz log bounds", effect.interval.upper, expected.upper, relative: 1e-12, context)
                parity.check("Katz log p", effect.pValue, expected.pValue, relative: 1e-12, context)
                #expect(effect.method == .katzLog)
            } else {
                #expect(throws: StatisticsError.self) { try comparison.ratioEstimate(.katzLog) }
            }
            for (method, expected) in [(RatioIntervalMethod.miettinenNurminenScore, vector.miettinenNurminenScore),
                                       (.koopmanScore, vector.koopmanScore)] {
                let effect = try comparison.ratioEstimate(method, confidence: file.confidence)
                let name = method == .koopmanScore ? "Koopman score" : "MN score"
                parity.check("\(name) bounds", effect.interval.lower, expected.lower, relative: 1e-12, context)
                parity.check("\(name) bounds", effect.interval.upper, expected.upper, relative: 1e-12, context)
                parity.check("\(name) p", effect.pValue, expected.pValue, relative: 1e-12, context)
                #expect(effect.method.rawValue == method.rawValue)
            }
        }
        print("statsmodels ratio vectors, largest relative error:\n\(parity.summary)")
    }

    @Test func badInputGetsNamedErrors() throws {
        #expect(throws: StatisticsError(.zeroBaseline)) { try Self.comparison([3, 10], [0, 10]).ratioEstimate() }
        #expect(throws: StatisticsError(.zeroBaseline)) { try Self.comparison([0, 10], [0, 10]).ratioEstimate(.katzLog) }
        #expect(throws: StatisticsError(.tooFewUnits)) { try Self.comparison([0, 0], [1, 10]).ratioEstimate() }
        #expect(throws: StatisticsError(.undefinedLogRatio)) { try Self.comparison([0, 10], [4, 10]).ratioEstimate(.katzLog) }
        #expect(throws: StatisticsError(.zeroVariance)) { try Self.comparison([5, 5], [4, 4]).ratioEstimate(.katzLog) }
        // The score interval handles a variant without successes: it starts at 0 (-100%).
        let none = try Self.comparison([0, 10], [4, 10]).ratioEstimate()
        #expect(none.interval.lower == 0 && none.relativeInterval.lower == -1 && none.interval.upper > 0)
    }

    @Test func theFlagAndThePValueFollowTheInterval() throws {
        var generator = SplitMix64(seed: 1984)
        for _ in 0..<1500 {
            let n1 = Int.random(in: 1...[2, 30, 400, 100_000].randomElement(using: &generator)!, using: &generator)
            let n2 = Int.random(in: 1...[2, 30, 400, 100_000].randomElement(using: &generator)!, using: &generator)
            let x1 = [0, n1, Int.random(in: 0...n1, using: &generator)].randomElement(using: &generator)!
            let x2 = [n2, Int.random(in: 1...n2, using: &generator)].randomElement(using: &generator)!
            let comparison = try Self.comparison([x1, n1], [x2, n2])
            let confidence = [0.9, 0.95, 0.99].randomElement(using: &generator)!
            for method in RatioIntervalMethod.allCases {
                guard let effect = try? comparison.ratioEstimate(method, confidence: confidence) else {
                    #expect(method == .katzLog, "\(x1)/\(n1) vs \(x2)/\(n2)")
                    continue
                }
                let context = "\(method) \(x1)/\(n1) vs \(x2)/\(n2)"
                #expect(effect.interval.lower >= 0 && effect.relativeInterval.lower >= -1, "\(context)")
                #expect(effect.interval.lower <= effect.estimate && effect.estimate <= effect.interval.upper, "\(context)")
                #expect(effect.interval.upper.isFinite && effect.pValue >= 0 && effect.pValue <= 1, "\(context)")
                // Far enough from the boundary for rounding not to decide.
                if abs(effect.pValue - (1 - confidence)) > 1e-9 {
                    #expect(effect.isSignificant == (effect.pValue < 1 - confidence), "\(context) p=\(effect.pValue) \(effect.interval)")
                }
            }
        }
    }

    @Test func binomialWaldDifference() throws {
        let effect = try Self.comparison([56, 70], [48, 80]).binomialWaldDifference()
        let variance = 0.8 * 0.2 / 70 + 0.6 * 0.4 / 80
        #expect(matches(effect.estimate, 0.2, relative: 1e-14))
        #expect(matches(effect.interval.upper - effect.estimate, Normal.quantile(0.975) * variance.squareRoot(), relative: 1e-12))
        #expect(matches(effect.pValue, 2 * Normal.survival(0.2 / variance.squareRoot()), relative: 1e-12))
        #expect(throws: StatisticsError(.zeroVariance)) { try Self.comparison([0, 7], [0, 8]).binomialWaldDifference() }
    }
}
