import Foundation

/// The tests shared by every normally distributed effect estimate `d` with variance `v`: Welch's t
/// for one planned look, the always-valid confidence sequence for many. `Lift` and
/// `TreatmentEffect` both use them.
enum EffectInference {
    /// Welch's two-sided t test on `dof` degrees of freedom (gbstats `TwoSidedTTest`):
    /// interval `d +- t_{1-alpha/2} sqrt(v)`, p-value `2 P(T > |d| / sqrt(v))`. gbstats computes
    /// `2 (1 - F)`, which loses everything below about 1e-16; the survival function keeps it.
    static func welch(estimate: Double, variance: Double, degreesOfFreedom: Double,
                      alpha: Double) -> (interval: ConfidenceInterval, pValue: Double) {
        precondition(alpha > 0 && alpha < 1, "alpha must be in (0, 1)")
        let standardError = variance.squareRoot()
        let halfWidth = StudentT.quantile(1 - alpha / 2, degreesOfFreedom: degreesOfFreedom) * standardError
        let pValue = 2 * StudentT.survival(abs(estimate / standardError), degreesOfFreedom: degreesOfFreedom)
        return (ConfidenceInterval(lower: estimate - halfWidth, upper: estimate + halfWidth), min(1, pValue))
    }

    /// The asymptotic normal-mixture confidence sequence of Waudby-Smith et al. ("Time-uniform
    /// central limit theory and asymptotic confidence sequences", 2023; eq. 9), on the
    /// Gaussian-mixture boundary of Howard et al. (2021), as gbstats' `SequentialTwoSidedTTest`.
    /// With `N` units, `s^2 = N v` and the mixing precision tightest at `N = N*` (eq. 161):
    ///
    ///     rho^2     = (-2 ln alpha + ln(1 - 2 ln alpha)) / N*
    ///     halfWidth = s sqrt( 2 (N rho^2 + 1) / (N rho)^2 ln( sqrt(N rho^2 + 1) / alpha ) )
    ///
    /// and the always-valid p-value is the reciprocal of the mixture martingale at `N` (eq. 155),
    /// capped at 1, `E = exp( rho^2 N^2 d^2 / (2 s^2 (N rho^2 + 1)) ) / sqrt(N rho^2 + 1)`,
    /// so that `p < alpha` exactly when the interval excludes 0.
    static func confidenceSequence(estimate: Double, variance: Double, units: Int, alpha: Double,
                                   tuning: Double) -> (interval: ConfidenceInterval, pValue: Double) {
        precondition(alpha > 0 && alpha < 1, "alpha must be in (0, 1)")
        precondition(tuning > 0, "the tuning parameter must be positive")
        let n = Double(units)
        let logAlpha = log(alpha)
        let rhoSquared = (-2 * logAlpha + log(1 - 2 * logAlpha)) / tuning
        let perUnitVariance = variance * n
        let spread = n * rhoSquared + 1
        let halfWidth = (perUnitVariance * 2 * spread / (n * n * rhoSquared) * (0.5 * log(spread) - logAlpha)).squareRoot()
        let logEValue = rhoSquared * n * n * estimate * estimate / (2 * perUnitVariance * spread) - 0.5 * log(spread)
        return (ConfidenceInterval(lower: estimate - halfWidth, upper: estimate + halfWidth), min(1, exp(-logEValue)))
    }
}
