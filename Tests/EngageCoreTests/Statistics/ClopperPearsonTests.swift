import Foundation
import Testing
@testable import EngageCore

@Suite struct ClopperPearsonTests {
    /// Against scipy's `binomtest(...).proportion_ci(method="exact")`, two-sided and one-sided.
    @Test func matchesScipy() throws {
        var parity = GbstatsParity()
        for vector in ExperimentStatisticsFixture.shared.clopperPearson {
            let proportion = try Proportion(successes: vector.successes, trials: vector.trials)
            let interval = proportion.clopperPearsonInterval(confidence: vector.confidence)
            let context = "\(vector.successes)/\(vector.trials) at \(vector.confidence)"
            parity.check("lower", interval.lower, vector.lower, context)
            parity.check("upper", interval.upper, vector.upper, context)
            parity.check("one-sided upper", proportion.clopperPearsonUpperBound(confidence: vector.confidence),
                         vector.upperOneSided, context)
        }
        parity.expectAgreement(label: "clopper-pearson (scipy)")
    }

    /// The bounds are where the binomial tails equal the error rate: P(X >= x | lower) = a/2 and
    /// P(X <= x | upper) = a/2, computed here by summing the binomial terms.
    @Test func boundsSolveTheBinomialTails() throws {
        func binomialCDF(_ x: Int, _ n: Int, _ p: Double) -> Double {
            var total = 0.0
            for k in 0...x {
                let logChoose: Double = lgamma(Double(n + 1)) - lgamma(Double(k + 1)) - lgamma(Double(n - k + 1))
                let logTerm: Double = logChoose + Double(k) * log(p) + Double(n - k) * log1p(-p)
                total += exp(logTerm)
            }
            return total
        }
        for (x, n) in [(1, 12), (7, 40), (30, 90), (99, 100)] {
            let interval = try Proportion(successes: x, trials: n).clopperPearsonInterval(confidence: 0.9)
            #expect(abs(binomialCDF(x, n, interval.upper) - 0.05) <= 1e-12)
            #expect(abs(1 - binomialCDF(x - 1, n, interval.lower) - 0.05) <= 1e-12)
        }
        #expect(try Proportion(successes: 0, trials: 0).clopperPearsonInterval() == ConfidenceInterval(lower: 0, upper: 1))
        #expect(try Proportion(successes: 5, trials: 5).clopperPearsonUpperBound() == 1)
    }

    /// The beta quantile inverts the beta distribution function across shapes and tails.
    @Test func betaQuantileInvertsTheDistribution() {
        for (a, b) in [(0.5, 0.5), (1.0, 3.0), (2.5, 40.0), (131.0, 2270.0), (4000.0, 1.0)] {
            for p in [1e-12, 1e-6, 0.025, 0.5, 0.975, 1 - 1e-9] {
                let x = BetaDistribution.quantile(p, a: a, b: b)
                // x is as good as a double gets: p lies between the distribution at its neighbours
                // (near 1 the quantile itself rounds, so cdf(x) alone may miss p).
                let slack = 1e-12 * max(p, 1e-3)
                #expect(BetaDistribution.cdf(x.nextDown, a: a, b: b) <= p + slack
                        && BetaDistribution.cdf(x.nextUp, a: a, b: b) >= p - slack, "a \(a) b \(b) p \(p): x \(x)")
            }
        }
    }
}
