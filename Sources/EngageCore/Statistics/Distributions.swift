import Foundation

/// The standard normal distribution.
public enum Normal {
    /// Density `exp(-x^2 / 2) / sqrt(2 pi)`.
    public static func pdf(_ x: Double) -> Double {
        exp(-0.5 * x * x - SpecialFunctions.logSqrtTwoPi)
    }

    /// `P(Z <= x)`, from the C library's `erfc`, so both tails keep their relative precision
    /// (about 1e-15 relative down to `cdf(-37)`, near the smallest normal double).
    public static func cdf(_ x: Double) -> Double {
        0.5 * erfc(-x / 2.0.squareRoot())
    }

    /// `P(Z > x) = cdf(-x)`.
    public static func survival(_ x: Double) -> Double {
        0.5 * erfc(x / 2.0.squareRoot())
    }

    /// The inverse of `cdf`: the `x` with `cdf(x) == p`.
    ///
    /// Acklam's rational approximation (relative error below 1.15e-9) followed by Halley steps
    /// on the `erfc`-based `cdf` of the smaller tail, which bring it to full double precision
    /// (AS 241 level, about 1e-16 relative). Returns -infinity at 0, +infinity at 1, NaN outside.
    public static func quantile(_ p: Double) -> Double {
        guard p > 0, p < 1 else {
            if p == 0 { return -.infinity }
            if p == 1 { return .infinity }
            return .nan
        }
        // Work in the lower tail so that the target probability is never rounded by 1 - p.
        let tail = min(p, 1 - p)
        var x = acklamLowerTail(tail)
        for _ in 0..<3 {
            let error = cdf(x) - tail
            let scaled = error / pdf(x) // Newton step; Halley's correction below
            guard scaled.isFinite else { break }
            let step = scaled / (1 + 0.5 * x * scaled)
            x -= step
            if abs(step) <= 1e-16 * abs(x) { break }
        }
        return p < 0.5 ? x : -x
    }

    /// Acklam's approximation for `p <= 0.5`; returns a negative or zero quantile.
    private static func acklamLowerTail(_ p: Double) -> Double {
        let a = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00]
        let b = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                 6.680131188771972e+01, -1.328068155288572e+01]
        let c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                 -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00]
        let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                 3.754408661907416e+00]
        if p < 0.02425 {
            let q = (-2 * log(p)).squareRoot()
            let numerator = ((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]
            let denominator = (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
            return numerator / denominator
        }
        let q = p - 0.5
        let r = q * q
        let numerator = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
        let denominator = ((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1
        return numerator / denominator
    }
}

/// Student's t distribution with real (not necessarily whole) degrees of freedom, as Welch's
/// test needs.
public enum StudentT {
    /// `P(T > t)`; for `t >= 0` this is `I_{v/(v+t^2)}(v/2, 1/2) / 2`, about 1e-14 relative or better.
    public static func survival(_ t: Double, degreesOfFreedom v: Double) -> Double {
        precondition(v > 0, "degrees of freedom must be positive")
        if t.isNaN { return .nan }
        if t.isInfinite { return t > 0 ? 0 : 1 }
        if v.isInfinite { return Normal.survival(t) }
        let tSquared = t * t
        let x = v / (v + tSquared)
        let complement = tSquared / (v + tSquared)
        // From 30 degrees of freedom on, the continued fraction would lose up to 1e-10 (at a
        // million degrees of freedom); the asymptotic expansion keeps about 1e-15.
        let tail = v >= 30
            ? 0.5 * SpecialFunctions.regularizedBetaLargeA(x, complement: complement, v / 2, 0.5)
            : 0.5 * SpecialFunctions.regularizedBeta(x, complement: complement, v / 2, 0.5)
        return t >= 0 ? tail : 1 - tail
    }

    /// `P(T <= t)`.
    public static func cdf(_ t: Double, degreesOfFreedom v: Double) -> Double {
        survival(-t, degreesOfFreedom: v)
    }

    /// Density.
    public static func pdf(_ t: Double, degreesOfFreedom v: Double) -> Double {
        if v.isInfinite { return Normal.pdf(t) }
        let logNormalizer = SpecialFunctions.logGammaDifference(v / 2, plus: 0.5) - 0.5 * log(v * Double.pi)
        return exp(logNormalizer - (v + 1) / 2 * log1p(t * t / v))
    }

    /// The inverse of `cdf`. Closed forms for 1 and 2 degrees of freedom; otherwise a
    /// Cornish-Fisher start refined by safeguarded Newton steps on the survival function to
    /// about 1e-14 relative.
    public static func quantile(_ p: Double, degreesOfFreedom v: Double) -> Double {
        precondition(v > 0, "degrees of freedom must be positive")
        guard p > 0, p < 1 else {
            if p == 0 { return -.infinity }
            if p == 1 { return .infinity }
            return .nan
        }
        if p == 0.5 { return 0 }
        // Solve in the upper tail for the smaller tail probability, then restore the sign.
        let tail = min(p, 1 - p)
        let t = upperTailQuantile(tail, v)
        return p > 0.5 ? t : -t
    }

    /// The `t > 0` with `survival(t) == q`, for `0 < q < 1/2`.
    private static func upperTailQuantile(_ q: Double, _ v: Double) -> Double {
        if v.isInfinite { return -Normal.quantile(q) }
        if v == 1 { return 1 / tan(Double.pi * q) }
        if v == 2 {
            let a = 1 - 2 * q
            return a / (2 * q * (1 - q)).squareRoot()
        }
        // Cornish-Fisher expansion around the normal quantile.
        let z = -Normal.quantile(q)
        let z2 = z * z
        let g1 = (z2 + 1) * z / 4
        let g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
        let g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
        var t = z + g1 / v + g2 / (v * v) + g3 / (v * v * v)
        if !(t > 0) || !t.isFinite { t = z }
        // Bracket the root: survival decreases in t.
        var low = 0.0
        var high = Double.infinity
        for _ in 0..<200 {
            let s = survival(t, degreesOfFreedom: v)
            if s > q { low = t } else { high = t }
            if s == q { return t }
            var next = t + (s - q) / pdf(t, degreesOfFreedom: v)
            if !(next > low && next < high) {
                next = high.isFinite ? (low + high) / 2 : max(2 * t, 1)
            }
            if abs(next - t) <= 1e-15 * t { return next }
            t = next
        }
        return t
    }
}

/// The chi-square distribution.
public enum ChiSquare {
    /// `P(X > x)` for `k` degrees of freedom: the regularized upper incomplete gamma
    /// function `Q(k/2, x/2)`, accurate in relative terms far into the tail.
    public static func survival(_ x: Double, degreesOfFreedom k: Double) -> Double {
        precondition(k > 0, "degrees of freedom must be positive")
        return SpecialFunctions.regularizedGammaQ(k / 2, x / 2)
    }

    /// `P(X <= x)`.
    public static func cdf(_ x: Double, degreesOfFreedom k: Double) -> Double {
        precondition(k > 0, "degrees of freedom must be positive")
        return SpecialFunctions.regularizedGammaP(k / 2, x / 2)
    }
}
