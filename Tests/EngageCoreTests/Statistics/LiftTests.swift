import Foundation
import SeededRandom
import Testing
@testable import EngageCore

@Suite struct LiftTests {
    private func lift(_ vector: GbstatsVector) throws -> Lift {
        let comparison = try ProportionComparison(
            variant: Proportion(successes: vector.variant.successes, trials: vector.variant.trials),
            control: Proportion(successes: vector.control.successes, trials: vector.control.trials)
        )
        return try comparison.lift(LiftScale(rawValue: vector.scale)!)
    }

    /// The shared vectors, to the decimals they are stated with.
    @Test func sharedGbstatsVectors() throws {
        for vector in Shared.gbstatsBinomial {
            let lift = try lift(vector)
            #expect(matches(lift.estimate, vector.estimate, decimals: 10))
            #expect(matches(lift.standardError, vector.standardError, decimals: 10))

            let fixed = lift.fixedHorizon(confidence: 0.95)
            #expect(matches(fixed.pValue, vector.fixed.p, decimals: 11))
            #expect(matches(fixed.interval.lower, vector.fixed.lower, decimals: 10))
            #expect(matches(fixed.interval.upper, vector.fixed.upper, decimals: 10))

            let sequential = lift.sequential(confidence: 0.95, tuning: 5000)
            #expect(matches(sequential.pValue, vector.sequential.p, decimals: 10))
            #expect(matches(sequential.interval.lower, vector.sequential.lower, decimals: 10))
            #expect(matches(sequential.interval.upper, vector.sequential.upper, decimals: 10))

            if let bayes = vector.bayes {
                #expect(matches(lift.chanceToWin, bayes.p, decimals: 10))
            }
        }
    }

    /// Further gbstats 0.8.0 runs, to near double precision.
    @Test func independentGbstatsRuns() throws {
        for vector in Independent.gbstatsBinomial {
            let lift = try lift(vector)
            let label = "\(vector.scale) \(vector.variant) vs \(vector.control)"
            #expect(matches(lift.estimate, vector.estimate, relative: 1e-13), "\(label)")
            #expect(matches(lift.standardError, vector.standardError, relative: 1e-13), "\(label)")

            let fixed = lift.fixedHorizon()
            #expect(matches(fixed.pValue, vector.fixed.p, relative: 1e-10), "\(label)")
            #expect(matches(fixed.interval.lower, vector.fixed.lower, relative: 1e-11), "\(label)")
            #expect(matches(fixed.interval.upper, vector.fixed.upper, relative: 1e-11), "\(label)")

            let sequential = lift.sequential()
            #expect(matches(sequential.pValue, vector.sequential.p, relative: 1e-12), "\(label)")
            #expect(matches(sequential.interval.lower, vector.sequential.lower, relative: 1e-12), "\(label)")
            #expect(matches(sequential.interval.upper, vector.sequential.upper, relative: 1e-12), "\(label)")

            let bayes = try #require(vector.bayes)
            #expect(matches(lift.chanceToWin, bayes.p, relative: 1e-12), "\(label)")
            let credible = lift.credibleInterval()
            #expect(matches(credible.lower, bayes.lower, relative: 1e-12), "\(label)")
            #expect(matches(credible.upper, bayes.upper, relative: 1e-12), "\(label)")
        }
    }

    @Test func meanMetricMatchesGbstats() throws {
        let control = MetricSummary(mean: 5, variance: 9, count: 500)
        let variant = MetricSummary(mean: 5.3, variance: 10.24, count: 520)
        for vector in Independent.gbstatsMean {
            let lift = try Lift(variant: variant, control: control, scale: LiftScale(rawValue: vector.scale)!)
            #expect(matches(lift.estimate, vector.estimate, relative: 1e-12))
            #expect(matches(lift.standardError, vector.standardError, relative: 1e-12))
            let fixed = lift.fixedHorizon()
            #expect(matches(fixed.pValue, vector.fixed.p, relative: 1e-10))
            #expect(matches(fixed.interval.lower, vector.fixed.lower, relative: 1e-11))
            #expect(matches(fixed.interval.upper, vector.fixed.upper, relative: 1e-11))
            let sequential = lift.sequential(confidence: 0.9, tuning: 1000)
            #expect(matches(sequential.pValue, vector.sequential.p, relative: 1e-12))
            #expect(matches(sequential.interval.lower, vector.sequential.lower, relative: 1e-12))
            #expect(matches(sequential.interval.upper, vector.sequential.upper, relative: 1e-12))
        }
    }

    @Test func sequentialPValueIsBelowAlphaExactlyWhenZeroIsOutsideTheInterval() throws {
        var generator = SplitMix64(seed: 99)
        for _ in 0..<500 {
            let n1 = Int.random(in: 100...200_000, using: &generator)
            let n2 = Int.random(in: 100...200_000, using: &generator)
            let comparison = try ProportionComparison(
                variant: Proportion(successes: Int.random(in: 1..<n1 / 5, using: &generator), trials: n1),
                control: Proportion(successes: Int.random(in: 1..<n2 / 5, using: &generator), trials: n2)
            )
            for scale in LiftScale.allCases {
                let result = try comparison.lift(scale).sequential(confidence: 0.95)
                let fixed = try comparison.lift(scale).fixedHorizon(confidence: 0.95)
                let excludesZero = !result.interval.contains(0)
                // Skip the measure-zero boundary where rounding decides.
                if abs(result.pValue - 0.05) > 1e-9 {
                    #expect((result.pValue < 0.05) == excludesZero)
                }
                // Always-valid inference pays for optional stopping with a wider interval and,
                // away from the far tail (where Student's t is the heavier), a larger p-value.
                #expect(result.interval.width > fixed.interval.width)
                if fixed.pValue > 1e-6 {
                    #expect(result.pValue >= fixed.pValue)
                }
            }
        }
    }

    @Test func declinesWhatGbstatsDeclines() throws {
        let zero = try Proportion(successes: 0, trials: 100)
        let some = try Proportion(successes: 7, trials: 100)
        #expect(throws: StatisticsError(.zeroBaseline)) {
            try ProportionComparison(variant: some, control: zero).lift(.relative)
        }
        #expect(throws: StatisticsError(.zeroVariance)) {
            try ProportionComparison(variant: some, control: zero).lift(.absolute)
        }
        #expect(throws: StatisticsError(.zeroVariance)) {
            try ProportionComparison(variant: zero, control: some).lift(.relative)
        }
        let one = try Proportion(successes: 1, trials: 1)
        #expect(throws: StatisticsError(.tooFewUnits)) {
            try ProportionComparison(variant: one, control: some).lift(.absolute)
        }
    }

    @Test func chanceToWinIsSymmetric() throws {
        let a = try Proportion(successes: 130, trials: 1000)
        let b = try Proportion(successes: 100, trials: 1000)
        let forward = try ProportionComparison(variant: a, control: b).lift(.absolute).chanceToWin
        let backward = try ProportionComparison(variant: b, control: a).lift(.absolute).chanceToWin
        #expect(abs(forward + backward - 1) < 1e-15)
        #expect(forward > 0.95)
    }
}
