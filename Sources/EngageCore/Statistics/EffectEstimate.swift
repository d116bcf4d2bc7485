import Foundation

/// Whether an effect compares rates by their difference or by their ratio.
public enum ComparisonScale: String, Hashable, Sendable, CaseIterable {
    /// `p1 - p2`; no effect is 0.
    case difference
    /// `p1 / p2`; no effect is 1. Shown as a relative lift `p1 / p2 - 1`.
    case ratio

    /// The value of "no effect" on this scale.
    public var nullValue: Double { self == .difference ? 0 : 1 }
}

/// The one method behind an effect's interval and p-value (issue 16: one method per row).
public enum EffectMethod: String, Hashable, Sendable, CaseIterable {
    /// Wald on the log of a ratio with Katz's binomial variance `1/x1 - 1/n1 + 1/x2 - 1/n2`
    /// (Katz et al. 1978; statsmodels `confint_proportions_2indep(compare="ratio", method="log")`).
    case katzLog = "katz_log"
    /// Score interval for a ratio, inverted from Miettinen & Nurminen's (1985) statistic with
    /// its `N / (N - 1)` variance correction (statsmodels `method="score"`, the default).
    case miettinenNurminenScore = "miettinen_nurminen_score"
    /// The same score interval without the correction: Koopman (1984).
    case koopmanScore = "koopman_score"
    /// Wald with the binomial variance of a difference, `p1 q1 / n1 + p2 q2 / n2`.
    case binomialWald = "binomial_wald"
    /// Mantel-Haenszel risk difference with Sato's (1989) variance.
    case mantelHaenszelSato = "mantel_haenszel_sato"
    /// Mantel-Haenszel risk difference or ratio with Greenland & Robins' (1985) variance.
    case mantelHaenszelGreenlandRobins = "mantel_haenszel_greenland_robins"
    /// Mantel-Haenszel risk ratio with the large-strata (delta-method) variance of its log.
    case mantelHaenszelLargeStrata = "mantel_haenszel_large_strata"
    /// Wald with a cluster-robust variance: the device is the unit (see `DeviceClusteredRates`).
    case deviceClustered = "device_clustered"
    /// Mantel-Haenszel estimate with a cluster-robust variance over devices.
    case mantelHaenszelDeviceClustered = "mantel_haenszel_device_clustered"
}

/// An effect with the interval and the p-value of one method, so that they cannot disagree:
/// `isSignificant` is read off the interval, and the p-value is the one of the test that the
/// interval inverts.
public struct EffectEstimate: Hashable, Sendable {
    public let scale: ComparisonScale
    public let method: EffectMethod
    /// `p1 - p2` or `p1 / p2`.
    public let estimate: Double
    /// On the estimate's scale: a ratio interval never goes below 0.
    public let interval: ConfidenceInterval
    public let confidence: Double
    /// Two-sided p-value of "no effect" by the same method as `interval`.
    public let pValue: Double

    public init(scale: ComparisonScale, method: EffectMethod, estimate: Double, interval: ConfidenceInterval,
                confidence: Double, pValue: Double) {
        self.scale = scale
        self.method = method
        self.estimate = estimate
        self.interval = interval
        self.confidence = confidence
        self.pValue = pValue
    }

    /// True when the interval leaves out "no effect" (0, or a ratio of 1).
    public var isSignificant: Bool { !interval.contains(scale.nullValue) }

    /// For a ratio, the relative lift `ratio - 1` and its interval, which never goes below -1
    /// (-100%). For a difference, the estimate and interval unchanged.
    public var relativeLift: Double { scale == .ratio ? estimate - 1 : estimate }
    public var relativeInterval: ConfidenceInterval {
        scale == .ratio ? ConfidenceInterval(lower: interval.lower - 1, upper: interval.upper - 1) : interval
    }

    /// -1, 0 or +1: the side of "no effect" the estimate falls on.
    public var direction: Int {
        estimate > scale.nullValue ? 1 : (estimate < scale.nullValue ? -1 : 0)
    }

    /// A normal approximation on the estimate's own scale: `d +- z se`, kept within [-1, 1]
    /// where a difference of rates lives (which never moves 0 in or out), p from `z = d / se`.
    static func wald(difference: Double, variance: Double, method: EffectMethod, confidence: Double) throws(StatisticsError) -> EffectEstimate {
        guard variance > 0, variance.isFinite else {
            throw StatisticsError(.zeroVariance, detail: "variance=\(variance)")
        }
        let standardError = variance.squareRoot()
        let halfWidth = twoSidedCriticalValue(confidence: confidence) * standardError
        return EffectEstimate(
            scale: .difference, method: method, estimate: difference,
            interval: ConfidenceInterval(lower: max(-1, difference - halfWidth), upper: min(1, difference + halfWidth)),
            confidence: confidence, pValue: 2 * Normal.survival(abs(difference) / standardError)
        )
    }

    /// A normal approximation on the log scale, transformed back: `exp(log r +- z se)`, p from
    /// `z = log r / se`. The interval stays above 0, so the relative one stays above -100%.
    static func waldOnLog(ratio: Double, logVariance: Double, method: EffectMethod, confidence: Double) throws(StatisticsError) -> EffectEstimate {
        guard ratio > 0, ratio.isFinite else {
            throw StatisticsError(.undefinedLogRatio, detail: "ratio=\(ratio)")
        }
        guard logVariance > 0, logVariance.isFinite else {
            throw StatisticsError(.zeroVariance, detail: "log variance=\(logVariance)")
        }
        let logRatio = log(ratio)
        let standardError = logVariance.squareRoot()
        let halfWidth = twoSidedCriticalValue(confidence: confidence) * standardError
        return EffectEstimate(
            scale: .ratio, method: method, estimate: ratio,
            interval: ConfidenceInterval(lower: exp(logRatio - halfWidth), upper: exp(logRatio + halfWidth)),
            confidence: confidence, pValue: 2 * Normal.survival(abs(logRatio) / standardError)
        )
    }
}

/// How a crude (pooled) effect and a stratified (adjusted) one disagree: the words a report
/// owes its reader when the crude total points elsewhere than the adjusted answer (Simpson's
/// paradox).
public struct CrudeAdjustedDisagreement: Hashable, Sendable {
    /// The estimates fall on opposite sides of "no effect".
    public let direction: Bool
    /// One interval leaves out "no effect" and the other does not.
    public let significance: Bool

    /// Nil when both point the same way with the same significance.
    public init?(crude: EffectEstimate, adjusted: EffectEstimate) {
        direction = crude.direction * adjusted.direction < 0
        significance = crude.isSignificant != adjusted.isSignificant
        if !direction && !significance { return nil }
    }
}
