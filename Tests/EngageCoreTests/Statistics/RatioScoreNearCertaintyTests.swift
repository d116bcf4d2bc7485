import Testing
@testable import EngageCore

/// The Miettinen-Nurminen score interval of a ratio where rates are near 100% and counts large:
/// the constrained maximum-likelihood rate must not lose its digits to cancellation.
///
/// Reference: the score statistic of `RatioScoreStatistic` (Miettinen & Nurminen 1985, with the
/// `N / (N - 1)` factor) evaluated in 60-digit arithmetic (mpmath) and inverted by 400 bisection
/// steps on `log R`. statsmodels' `score_test_proportions_2indep` returns NaN or a wrong
/// statistic near these limits (its `np.roots` and the same cancellation), so it cannot serve.
@Suite struct RatioScoreNearCertaintyTests {
    /// rich x1 / n1, plain x2 / n2, the relative lift's bounds (ratio - 1) and the p-value.
    static let vectors: [(x1: Int, n1: Int, x2: Int, n2: Int, lower: Double, upper: Double, p: Double)] = [
        (10, 10, 999_999, 1_000_000, -0.27753227790365688033, 5.6649478607032100435e-6, 0.99747687168319440216),
        (999_999, 1_000_000, 1, 1, -5.6649157692864264156e-6, 3.8414578206941259584, 0.99920211557217787483),
        (1_000_000, 1_000_000, 999_999, 1_000_000, -2.8414507468288378136e-6, 5.6649458782299553101e-6,
         0.31731050786291410283),
        (2_000_000, 2_000_000, 1_000_000, 1_000_000, -1.9207263613935718862e-6, 3.841460101180826352e-6, 1.0),
    ]

    @Test func boundsNearOneKeepTheirDigits() throws {
        for vector in Self.vectors {
            let comparison = ProportionComparison(variant: try Proportion(successes: vector.x1, trials: vector.n1),
                                                  control: try Proportion(successes: vector.x2, trials: vector.n2))
            let effect = try comparison.ratioEstimate(.miettinenNurminenScore)
            let context = "\(vector.x1)/\(vector.n1) vs \(vector.x2)/\(vector.n2)"
            // On the relative lift, where these bounds are a few millionths from 0: the reference
            // is exact, and ratio - 1 itself loses about 1e-16 / 5e-6 of its digits.
            let lift = effect.relativeInterval
            #expect(matches(lift.lower, vector.lower, relative: 1e-9), "\(context): lower \(lift.lower), reference \(vector.lower)")
            #expect(matches(lift.upper, vector.upper, relative: 1e-9), "\(context): upper \(lift.upper), reference \(vector.upper)")
            #expect(matches(effect.pValue, vector.p, relative: 1e-9), "\(context): p \(effect.pValue), reference \(vector.p)")
        }
    }
}
