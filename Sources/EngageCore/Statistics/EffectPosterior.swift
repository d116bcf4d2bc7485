import Foundation

/// The Bayesian summary of an effect whose posterior is `Normal(mean, sd^2)`, as gbstats 0.8.0's
/// `EffectBayesianABTest` gives it with its default flat (improper) prior, where the posterior is
/// the estimate's own sampling distribution.
public struct EffectPosterior: Hashable, Sendable {
    /// Posterior probability that the treatment is better: `P(effect > 0)`, or `P(effect < 0)`
    /// for a metric where lower is better (gbstats' `inverse`).
    public let chanceToWin: Double
    /// Central interval holding `1 - alpha` of the posterior: `mean +- z_{1-alpha/2} sd`.
    public let credibleInterval: ConfidenceInterval
    /// Risk (expected loss) of keeping the control: the effect given up, averaged over the
    /// posterior, `E[max(effect, 0)]` (the better direction's part; gbstats' `risk[0]`).
    public let controlRisk: Double
    /// Risk of shipping the treatment: `E[max(-effect, 0)]` (gbstats' `risk[1]`).
    public let treatmentRisk: Double

    public init(mean: Double, standardDeviation sd: Double, alpha: Double = 0.05, higherIsBetter: Bool = true) {
        precondition(alpha > 0 && alpha < 1, "alpha must be in (0, 1)")
        precondition(sd > 0, "the posterior needs a positive standard deviation")
        let z = mean / sd
        chanceToWin = higherIsBetter ? Normal.cdf(z) : Normal.cdf(-z)
        let halfWidth = Normal.quantile(1 - alpha / 2) * sd
        credibleInterval = ConfidenceInterval(lower: mean - halfWidth, upper: mean + halfWidth)
        let gain = sd * Self.positivePartMean(z)
        let loss = sd * Self.positivePartMean(-z)
        controlRisk = higherIsBetter ? gain : loss
        treatmentRisk = higherIsBetter ? loss : gain
    }

    /// `E[max(Z + z, 0)]` for a standard normal `Z`, which is `phi(z) + z Phi(z)`.
    ///
    /// gbstats gets it from scipy's truncated-normal mean times `1 - Phi`, which keeps the
    /// winning side's risk but loses the losing side's digits (at z = -6.7 it is 4e-6 off). For
    /// `z >= -2` the closed form cancels by at most one digit; below, with `a = -z`,
    /// `phi(a) - a Q(a) = phi(a) / (a U + 1)` where `U = a + 2/(a + 3/(a + 4/(...)))` is the tail
    /// of the continued fraction for Mills' ratio `Q(a) / phi(a) = 1 / (a + 1/U)`, evaluated
    /// from depth 200 (full double precision for `a >= 2`), free of cancellation.
    static func positivePartMean(_ z: Double) -> Double {
        if z >= -2 {
            return Normal.pdf(z) + z * Normal.cdf(z)
        }
        let a = -z
        var u = a
        for k in stride(from: 200, through: 2, by: -1) {
            u = a + Double(k) / u
        }
        return Normal.pdf(a) / (a * u + 1)
    }
}
