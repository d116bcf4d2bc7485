import Foundation

/// The beta distribution with shapes `a, b > 0`.
public enum BetaDistribution {
    /// `P(X <= x)`, the regularized incomplete beta function `I_x(a, b)`.
    public static func cdf(_ x: Double, a: Double, b: Double) -> Double {
        precondition(a > 0 && b > 0, "shapes must be positive")
        if x <= 0 { return 0 }
        if x >= 1 { return 1 }
        return SpecialFunctions.regularizedBeta(x, complement: 1 - x, a, b)
    }

    /// Density.
    public static func pdf(_ x: Double, a: Double, b: Double) -> Double {
        precondition(a > 0 && b > 0, "shapes must be positive")
        guard x > 0, x < 1 else { return 0 }
        return exp((a - 1) * log(x) + (b - 1) * log1p(-x) - SpecialFunctions.logBeta(a, b))
    }

    /// The `x` with `cdf(x) == p`: Newton steps on the incomplete beta function, kept inside a
    /// bisection bracket, to about 1e-15 relative. 0 at `p = 0`, 1 at `p = 1`.
    public static func quantile(_ p: Double, a: Double, b: Double) -> Double {
        precondition(a > 0 && b > 0, "shapes must be positive")
        precondition(p >= 0 && p <= 1, "p must be a probability")
        if p == 0 { return 0 }
        if p == 1 { return 1 }
        var low = 0.0
        var high = 1.0
        var x = a / (a + b)
        for _ in 0..<400 {
            let error = cdf(x, a: a, b: b) - p
            if error == 0 { return x }
            if error < 0 { low = x } else { high = x }
            let density = pdf(x, a: a, b: b)
            var next = density > 0 ? x - error / density : .nan
            if !(next > low && next < high) {
                next = (low + high) / 2
            }
            if abs(next - x) <= 1e-16 * x || high - low <= 1e-17 * high {
                return next
            }
            x = next
        }
        return x
    }
}

extension Proportion {
    /// The Clopper-Pearson ("exact") interval: the `p` not rejected by either one-sided binomial
    /// test at `(1 - confidence) / 2`, from beta quantiles,
    /// `[B(a/2; x, n - x + 1), B(1 - a/2; x + 1, n - x)]`, with 0 at `x = 0` and 1 at `x = n`.
    /// It covers at least `confidence` for every `p`. No trials give [0, 1].
    public func clopperPearsonInterval(confidence: Double = 0.95) -> ConfidenceInterval {
        precondition(confidence > 0 && confidence < 1, "confidence must be in (0, 1)")
        guard trials > 0 else { return ConfidenceInterval(lower: 0, upper: 1) }
        let tail = (1 - confidence) / 2
        let x = Double(successes)
        let n = Double(trials)
        let lower = successes == 0 ? 0 : BetaDistribution.quantile(tail, a: x, b: n - x + 1)
        let upper = successes == trials ? 1 : BetaDistribution.quantile(1 - tail, a: x + 1, b: n - x)
        return ConfidenceInterval(lower: lower, upper: upper)
    }

    /// The one-sided Clopper-Pearson upper bound: the largest `p` with `P(X <= x | p) >=
    /// 1 - confidence`, `B(confidence; x + 1, n - x)`, 1 at `x = n` or without trials. "The
    /// false-alarm rate is at most this, with `confidence`."
    public func clopperPearsonUpperBound(confidence: Double = 0.95) -> Double {
        precondition(confidence > 0 && confidence < 1, "confidence must be in (0, 1)")
        guard trials > 0, successes < trials else { return 1 }
        let x = Double(successes)
        return BetaDistribution.quantile(confidence, a: x + 1, b: Double(trials) - x)
    }
}
