import Foundation

/// Miettinen & Nurminen's (1985) score statistic for `p1 / p2 == R`, with the variance taken at
/// the maximum-likelihood rates under that constraint (Koopman 1984 without the correction):
///
///     z(R) = (p1 - R p2) / sqrt( c (p~1 (1 - p~1) / n1 + R^2 p~2 (1 - p~2) / n2) )
///
/// where `p~1 = R p~2`, `p~2` is the smaller root of `N R p^2 - (n1 R + x1 + n2 + x2 R) p + x = 0`
/// (`N = n1 + n2`, `x = x1 + x2`) and `c = N / (N - 1)` with the correction, 1 without. At
/// `R = 1` the constrained rates are the pooled rate. As statsmodels'
/// `score_test_proportions_2indep(compare="ratio")`.
///
/// `z` falls as `R` grows, so the interval `{R : |z(R)| <= z_(1-a/2)}` is found by bisection
/// on `log R`, and its p-value `2 (1 - Phi(|z(1)|))` is the test that the interval inverts.
struct RatioScoreStatistic {
    let x1: Double, n1: Double, x2: Double, n2: Double
    let varianceFactor: Double

    init(_ comparison: ProportionComparison, correction: Bool) {
        x1 = Double(comparison.variant.successes)
        n1 = Double(comparison.variant.trials)
        x2 = Double(comparison.control.successes)
        n2 = Double(comparison.control.trials)
        let total = n1 + n2
        varianceFactor = correction ? total / (total - 1) : 1
    }

    var ratio: Double { (x1 / n1) / (x2 / n2) }

    func z(_ ratio: Double) -> Double {
        let rates = constrainedRates(ratio)
        let variance = varianceFactor * (rates.variant * rates.variantFailure / n1
                                         + ratio * ratio * rates.control * rates.controlFailure / n2)
        let numerator = x1 / n1 - ratio * x2 / n2
        if numerator == 0 { return 0 }
        return numerator / max(0, variance).squareRoot()
    }

    /// The maximum-likelihood rates under `p1 = R p2` and their complements, each computed
    /// without cancellation: near rates of 100% with many notifications, `1 - p` taken from `p`
    /// keeps no digit (a million notifications and a complement of 1e-10 lost six).
    ///
    /// With `u = R (n1 + x2)`, `v = n2 + x1`, `d = u - v` and `f = n - x` the failures, the smaller
    /// root of `N R p^2 - (u + v) p + x = 0` is `p2 = 2 x / (u + v + s)` with
    /// `s = sqrt(d^2 + 4 R f1 f2)` (the discriminant `(u + v)^2 - 4 N R x`, rewritten as a sum), and
    ///
    ///     1 - p2 = (2 f2 + s + d) / (u + v + s),     1 - R p2 = (2 R f1 + s - d) / (u + v + s)
    ///
    /// where whichever of `s + d`, `s - d` would cancel is taken as `4 R f1 f2` over the other.
    private func constrainedRates(_ ratio: Double) -> (variant: Double, variantFailure: Double,
                                                       control: Double, controlFailure: Double) {
        let f1 = n1 - x1, f2 = n2 - x2
        let u = ratio * (n1 + x2)
        let v = n2 + x1
        let d = u - v
        let product = 4 * ratio * f1 * f2
        let s = (d * d + product).squareRoot()
        let larger = s + abs(d)
        let smaller = larger > 0 ? product / larger : 0
        let plus = d >= 0 ? larger : smaller   // s + d
        let minus = d >= 0 ? smaller : larger  // s - d
        let denominator = u + v + s
        let control = 2 * (x1 + x2) / denominator
        return (variant: ratio * control, variantFailure: (2 * ratio * f1 + minus) / denominator,
                control: control, controlFailure: (2 * f2 + plus) / denominator)
    }

    /// Needs both groups with trials and a control with successes (so that the ratio is finite).
    func estimate(method: EffectMethod, confidence: Double) -> EffectEstimate {
        let critical = twoSidedCriticalValue(confidence: confidence)
        let estimate = ratio
        let lower = x1 == 0 ? 0 : exp(crossing(of: critical, from: log(estimate)))
        let upper = exp(crossing(of: -critical, from: x1 == 0 ? 0 : log(estimate)))
        let pValue = min(1, 2 * Normal.survival(abs(z(1))))
        return EffectEstimate(
            scale: .ratio, method: method, estimate: estimate,
            interval: ConfidenceInterval(lower: min(lower, estimate), upper: max(upper, estimate)),
            confidence: confidence, pValue: pValue
        )
    }

    /// The `t` with `z(exp(t)) == target`, for the decreasing `z`, searched outward from `start`.
    private func crossing(of target: Double, from start: Double) -> Double {
        func above(_ t: Double) -> Bool { z(exp(t)) > target }
        var low = start
        var high = start
        var step = 1.0
        // Expand until z(exp(low)) > target >= z(exp(high)); 700 keeps exp finite.
        while !above(low), low > -700 { low -= step; step *= 2 }
        step = 1
        while above(high), high < 700 { high += step; step *= 2 }
        for _ in 0..<200 {
            let middle = 0.5 * (low + high)
            if middle <= low || middle >= high { break }
            if above(middle) { low = middle } else { high = middle }
        }
        return 0.5 * (low + high)
    }
}
