import Foundation

/// The exact two-sided binomial test: the probability, under `p`, of every outcome no more likely
/// than the one observed (the "minlike" rule of R's `binom.test` and scipy's `binomtest`, with
/// scipy's relative tolerance of 1e-7 for outcomes as likely as it). For counts too small for a
/// chi-square approximation, which is off by orders of magnitude there.
public enum BinomialTest {
    /// The p-value of `successes` in `trials` with success probability `probability`.
    public static func twoSidedPValue(successes k: Int, trials n: Int, probability p: Double) -> Double {
        precondition(n >= 0 && k >= 0 && k <= n, "successes must lie between 0 and the trials")
        precondition(p >= 0 && p <= 1, "a probability lies between 0 and 1")
        if p == 0 { return k == 0 ? 1 : 0 }
        if p == 1 { return k == n ? 1 : 0 }
        let expected = p * Double(n)
        if Double(k) == expected { return 1 }
        let bound = logProbability(k, n, p) + log1p(1e-7)
        if Double(k) < expected {
            // Above the mode the probabilities fall: the first outcome there no more likely than k.
            var low = Int(expected.rounded(.up)), high = n
            guard logProbability(high, n, p) <= bound else { return min(1, cdf(k, n, p)) }
            while low < high {
                let middle = low + (high - low) / 2
                if logProbability(middle, n, p) <= bound { high = middle } else { low = middle + 1 }
            }
            return min(1, cdf(k, n, p) + survival(low - 1, n, p))
        }
        // Below the mode the probabilities rise: the last outcome there no more likely than k.
        var low = 0, high = Int(expected.rounded(.down))
        guard logProbability(low, n, p) <= bound else { return min(1, survival(k - 1, n, p)) }
        while low < high {
            let middle = low + (high - low + 1) / 2
            if logProbability(middle, n, p) <= bound { low = middle } else { high = middle - 1 }
        }
        return min(1, cdf(low, n, p) + survival(k - 1, n, p))
    }

    /// ln P(X = k), accurate relative to its size at any `n` by Loader's saddle-point form
    /// ("Fast and accurate computation of binomial probabilities", 2000; R's `dbinom_raw`): a
    /// difference of `lgamma` values carries an error of a few ulp of `n ln n`, as large as the
    /// 1e-7 tolerance for ties from about ten million trials.
    static func logProbability(_ k: Int, _ n: Int, _ p: Double) -> Double {
        let q = 1 - p
        if k == 0 { return Double(n) * log1p(-p) }
        if k == n { return Double(n) * log(p) }
        let (x, trials) = (Double(k), Double(n))
        let exponent = stirlingError(trials) - stirlingError(x) - stirlingError(trials - x)
            - deviance(x, trials * p) - deviance(trials - x, trials * q)
        return exponent - 0.5 * log(2 * Double.pi * x * (trials - x) / trials)
    }

    /// `ln n! - ln(sqrt(2 pi n) (n/e)^n)`.
    private static func stirlingError(_ n: Double) -> Double {
        if n >= 10 { return SpecialFunctions.stirlingCorrection(n) }
        return lgamma(n + 1) - (n + 0.5) * log(n) + n - SpecialFunctions.logSqrtTwoPi
    }

    /// `x ln(x / m) + m - x`, by its series where `x` is near `m` (where the plain form cancels).
    private static func deviance(_ x: Double, _ m: Double) -> Double {
        guard abs(x - m) < 0.1 * (x + m) else { return x * log(x / m) + m - x }
        var v = (x - m) / (x + m)
        var sum = (x - m) * v
        var term = 2 * x * v
        v *= v
        for j in 1..<1_000 {
            term *= v
            let next = sum + term / Double(2 * j + 1)
            if next == sum { return next }
            sum = next
        }
        return sum
    }

    /// P(X <= k) = I_{1-p}(n - k, k + 1).
    static func cdf(_ k: Int, _ n: Int, _ p: Double) -> Double {
        if k < 0 { return 0 }
        if k >= n { return 1 }
        return SpecialFunctions.regularizedBeta(1 - p, complement: p, Double(n - k), Double(k + 1))
    }

    /// P(X > k) = I_p(k + 1, n - k).
    static func survival(_ k: Int, _ n: Int, _ p: Double) -> Double {
        if k < 0 { return 1 }
        if k >= n { return 0 }
        return SpecialFunctions.regularizedBeta(p, complement: 1 - p, Double(k + 1), Double(n - k))
    }
}
