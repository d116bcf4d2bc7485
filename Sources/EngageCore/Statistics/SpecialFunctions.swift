import Foundation

/// Special functions behind the distributions: log-gamma differences, the regularized incomplete
/// gamma and beta functions. Internal; the public face is `Normal`, `StudentT` and `ChiSquare`.
enum SpecialFunctions {
    static let logSqrtTwoPi = 0.918_938_533_204_672_741_78 // ln(sqrt(2 pi))
    private static let epsilon = 1e-16
    private static let tiny = 1e-300
    private static let maxIterations = 100_000

    // MARK: Log-gamma

    /// `lgamma(x) - [(x - 1/2) ln x - x + ln sqrt(2 pi)]` for x >= 10, from the Stirling series
    /// (terms up to x^-13; the first omitted term is below 3e-17 at x = 10).
    static func stirlingCorrection(_ x: Double) -> Double {
        let inverse = 1 / x
        let inverseSquared = inverse * inverse
        // Coefficients B_{2k} / (2k (2k - 1)) of the asymptotic series, k = 1...7.
        var series = 1.0 / 156
        series = series * inverseSquared - 691.0 / 360_360
        series = series * inverseSquared + 1.0 / 1188
        series = series * inverseSquared - 1.0 / 1680
        series = series * inverseSquared + 1.0 / 1260
        series = series * inverseSquared - 1.0 / 360
        series = series * inverseSquared + 1.0 / 12
        return series * inverse
    }

    /// `ln Gamma(x + b) - ln Gamma(x)` without the cancellation of two large `lgamma` values.
    static func logGammaDifference(_ x: Double, plus b: Double) -> Double {
        if x < 10 || x + b < 10 {
            return lgamma(x + b) - lgamma(x)
        }
        // (x+b-1/2) ln(x+b) - (x-1/2) ln x - b = (x - 1/2) log1p(b/x) + b ln(x+b) - b
        return (x - 0.5) * log1p(b / x) + b * log(x + b) - b
            + stirlingCorrection(x + b) - stirlingCorrection(x)
    }

    /// `ln B(a, b) = ln Gamma(a) + ln Gamma(b) - ln Gamma(a + b)`, accurate when either argument
    /// is large (Welch degrees of freedom reach the millions).
    static func logBeta(_ a: Double, _ b: Double) -> Double {
        let small = min(a, b)
        let large = max(a, b)
        if large < 10 {
            return lgamma(small) + lgamma(large) - lgamma(small + large)
        }
        if small < 10 {
            return lgamma(small) - logGammaDifference(large, plus: small)
        }
        // Both large: Stirling for all three terms, rearranged so no large terms cancel.
        let sum = small + large
        return logSqrtTwoPi - 0.5 * log(large)
            + (small - 0.5) * log(small / sum) - large * log1p(small / large)
            + stirlingCorrection(small) + stirlingCorrection(large) - stirlingCorrection(sum)
    }

    // MARK: Incomplete gamma

    /// Regularized upper incomplete gamma function `Q(a, x) = Gamma(a, x) / Gamma(a)`.
    static func regularizedGammaQ(_ a: Double, _ x: Double) -> Double {
        precondition(a > 0, "shape must be positive")
        if x.isNaN { return .nan }
        if x <= 0 { return 1 }
        if x == .infinity { return 0 }
        if x < a + 1 {
            return 1 - lowerGammaSeries(a, x)
        }
        return upperGammaContinuedFraction(a, x)
    }

    /// Regularized lower incomplete gamma function `P(a, x) = 1 - Q(a, x)`.
    static func regularizedGammaP(_ a: Double, _ x: Double) -> Double {
        precondition(a > 0, "shape must be positive")
        if x.isNaN { return .nan }
        if x <= 0 { return 0 }
        if x == .infinity { return 1 }
        if x < a + 1 {
            return lowerGammaSeries(a, x)
        }
        return 1 - upperGammaContinuedFraction(a, x)
    }

    /// `x^a e^-x / Gamma(a)`, the factor shared by the series and the continued fraction.
    private static func gammaPrefix(_ a: Double, _ x: Double) -> Double {
        exp(a * log(x) - x - lgamma(a))
    }

    /// P(a, x) = x^a e^-x / Gamma(a + 1) * sum_{n>=0} x^n / ((a+1)...(a+n)); converges fast
    /// for x < a + 1.
    private static func lowerGammaSeries(_ a: Double, _ x: Double) -> Double {
        var term = 1 / a
        var sum = term
        var denominator = a
        for _ in 0..<maxIterations {
            denominator += 1
            term *= x / denominator
            sum += term
            if abs(term) < abs(sum) * epsilon { break }
        }
        return sum * gammaPrefix(a, x)
    }

    /// Q(a, x) from Legendre's continued fraction
    /// `Gamma(a, x) = e^-x x^a / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))`,
    /// evaluated with the modified Lentz method; converges fast for x >= a + 1.
    private static func upperGammaContinuedFraction(_ a: Double, _ x: Double) -> Double {
        var b = x + 1 - a
        var c = 1 / tiny
        var d = 1 / b
        var fraction = d
        for i in 1...maxIterations {
            let n = Double(i)
            let numerator = -n * (n - a)
            b += 2
            d = numerator * d + b
            if abs(d) < tiny { d = tiny }
            c = b + numerator / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let step = d * c
            fraction *= step
            if abs(step - 1) < epsilon { break }
        }
        return fraction * gammaPrefix(a, x)
    }

    // MARK: Incomplete beta

    /// Regularized incomplete beta function `I_x(a, b)`. The caller passes both `x` and
    /// `complement = 1 - x` so that whichever is small keeps its full precision.
    static func regularizedBeta(_ x: Double, complement: Double, _ a: Double, _ b: Double) -> Double {
        precondition(a > 0 && b > 0, "shapes must be positive")
        if x <= 0 { return 0 }
        if complement <= 0 { return 1 }
        // The continued fraction converges quickly for x < (a + 1) / (a + b + 2);
        // otherwise use I_x(a, b) = 1 - I_{1-x}(b, a).
        if x * (a + b + 2) < a + 1 {
            return betaPrefix(x, complement, a, b) * betaContinuedFraction(x, a, b) / a
        }
        return 1 - betaPrefix(complement, x, b, a) * betaContinuedFraction(complement, b, a) / b
    }

    /// `(2k + 1)!` for k = 0...40, the expansion's longest run (81! is about 5.8e120).
    private static let oddFactorials: [Double] = {
        var values: [Double] = [1]
        var factorial = 1.0
        for k in 1...40 {
            factorial *= Double(2 * k) * Double(2 * k + 1)
            values.append(factorial)
        }
        return values
    }()

    /// `I_x(a, b)` for large `a` and `b <= 1` by the asymptotic expansion of DiDonato and
    /// Morris (1992, ACM TOMS 18:360, "BGRAT", eq. 9 to 9.6), written from the paper. The
    /// continued fraction loses digits there, because `x` sits near its switch-over point
    /// (for Student's t with `v` degrees of freedom, `x = v / (v + t^2)` is within `O(1/v)` of it).
    ///
    /// With `T = a + (b - 1)/2`, `u = -T ln x` and `h = u^b e^-u / Gamma(b)`:
    ///
    ///     I_x(a, b) = Gamma(a + b) / (Gamma(a) T^b) * sum_n p_n h J_n
    ///     h J_0 = Q(b, u)
    ///     h J_n = [(b + 2n - 2)(b + 2n - 1) h J_{n-1} + (u + b + 2n - 1) (ln x / 2)^(2n - 2) h] / (4 T^2)
    ///     p_0 = 1,  p_n = (b - 1) / (2n + 1)! + (1/n) sum_{m=1}^{n-1} (m b - n) p_{n-m} / (2m + 1)!
    ///
    /// Accurate to a few 1e-15 relative for `a >= 15`; results below about 1e-300 flush to 0.
    static func regularizedBetaLargeA(_ x: Double, complement: Double, _ a: Double, _ b: Double) -> Double {
        precondition(a >= 15 && b > 0 && b <= 1, "BGRAT needs a large a and b <= 1")
        if x <= 0 { return 0 }
        if complement <= 0 { return 1 }
        let t = a + (b - 1) / 2
        let logX = complement < 0.35 ? log1p(-complement) : log(x)
        let u = -t * logX
        let h = exp(b * log(u) - u - lgamma(b))
        let scale = exp(logGammaDifference(a, plus: b) - b * log(t))
        // h J_n, carried instead of J_n so that nothing divides by an underflowed h.
        var term = b == 0.5 ? erfc(u.squareRoot()) : regularizedGammaQ(b, u)
        var sum = term
        var p: [Double] = [1]
        let halfLogXSquared = (logX / 2) * (logX / 2)
        var power = 1.0 // (ln x / 2)^(2n - 2)
        let fourTSquared = 4 * t * t
        for n in 1..<oddFactorials.count {
            var pn = 0.0
            for m in 1..<n {
                pn += (Double(m) * b - Double(n)) * p[n - m] / oddFactorials[m]
            }
            pn = pn / Double(n) + (b - 1) / oddFactorials[n]
            p.append(pn)
            let shifted = b + Double(2 * n - 2)
            term = (shifted * (shifted + 1) * term + (u + shifted + 1) * power * h) / fourTSquared
            power *= halfLogXSquared
            let contribution = pn * term
            sum += contribution
            if abs(contribution) <= 1e-17 * abs(sum) { break }
        }
        return scale * sum
    }

    /// `x^a (1-x)^b / B(a, b)`.
    private static func betaPrefix(_ x: Double, _ complement: Double, _ a: Double, _ b: Double) -> Double {
        // ln x and ln(1-x), each from whichever of x and 1-x is known exactly.
        let logX = x < 0.5 ? log(x) : log1p(-complement)
        let logComplement = complement < 0.5 ? log(complement) : log1p(-x)
        return exp(a * logX + b * logComplement - logBeta(a, b))
    }

    /// The continued fraction `1 / (1 + d1 / (1 + d2 / (1 + ...)))` with
    /// `d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1))` and `d_{2m} = m (b-m) x / ((a+2m-1)(a+2m))`,
    /// evaluated with the modified Lentz method.
    private static func betaContinuedFraction(_ x: Double, _ a: Double, _ b: Double) -> Double {
        var c = 1.0
        var d = 1 - (a + b) * x / (a + 1)
        if abs(d) < tiny { d = tiny }
        d = 1 / d
        var fraction = d
        for i in 1...maxIterations {
            let m = Double(i)
            let twoM = 2 * m
            // Even step.
            var numerator = m * (b - m) * x / ((a + twoM - 1) * (a + twoM))
            d = 1 + numerator * d
            if abs(d) < tiny { d = tiny }
            c = 1 + numerator / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            fraction *= d * c
            // Odd step.
            numerator = -(a + m) * (a + b + m) * x / ((a + twoM) * (a + twoM + 1))
            d = 1 + numerator * d
            if abs(d) < tiny { d = tiny }
            c = 1 + numerator / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let step = d * c
            fraction *= step
            if abs(step - 1) < epsilon { break }
        }
        return fraction
    }
}
