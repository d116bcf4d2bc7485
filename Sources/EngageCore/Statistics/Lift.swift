import Foundation

/// Mean, per-unit variance and unit count of a metric in one group. A rate is the special case
/// `mean = p`, `variance = p (1 - p)` (see `Proportion.summary`).
public struct MetricSummary: Hashable, Sendable {
    public let mean: Double
    public let variance: Double
    public let count: Int

    public init(mean: Double, variance: Double, count: Int) {
        self.mean = mean
        self.variance = variance
        self.count = count
    }
}

/// Whether a lift is a difference of means or a ratio of them.
public enum LiftScale: String, Hashable, Sendable, CaseIterable {
    /// `m1 / m2 - 1`.
    case relative
    /// `m1 - m2`.
    case absolute

    var effectScale: EffectScale {
        switch self {
        case .relative: .relative
        case .absolute: .absolute
        }
    }
}

/// An interval and a two-sided p-value for `lift == 0`, the p-value the interval's: below alpha
/// exactly when the interval excludes 0, so adjusted when the interval is (`correction`).
public struct LiftTestResult: Hashable, Sendable {
    public let estimate: Double
    public let interval: ConfidenceInterval
    public let pValue: Double
    /// The comparison's own p-value, before any adjustment for multiple comparisons.
    public let unadjustedPValue: Double
    /// How `pValue` was adjusted from `unadjustedPValue` (and the interval's level lowered).
    public let correction: MultipleTesting

    init(estimate: Double, interval: ConfidenceInterval, pValue: Double, correction: MultipleTesting = .none) {
        self.estimate = estimate
        self.interval = interval
        self.pValue = correction.adjust(pValue)
        unadjustedPValue = pValue
        self.correction = correction
    }

    /// An uncorrected test of `estimate`.
    init(estimate: Double, _ test: IntervalTest) {
        self.init(estimate: estimate, interval: test.interval, pValue: test.pValue)
    }

    /// This test with its p-value adjusted by `correction`; the interval must already be at
    /// `correction.perComparison(alpha)`.
    public func adjusted(by correction: MultipleTesting) -> LiftTestResult {
        LiftTestResult(estimate: estimate, interval: interval, pValue: unadjustedPValue, correction: correction)
    }
}

/// The lift of a variant (group 1) over a control (group 2), estimated as GrowthBook's gbstats
/// does: a normal approximation with
///
///  - absolute: `d = m1 - m2`, `Var d = s1^2 / n1 + s2^2 / n2`;
///  - relative: `d = m1 / m2 - 1` and, by the delta method on the ratio of two independent means,
///    `Var d = s1^2 / (m2^2 n1) + s2^2 m1^2 / (m2^4 n2)`.
///
/// That is `TreatmentEffect` on two summaries, with units for devices; this type gives its
/// fixed-horizon test (Welch), sequential always-valid test and Bayesian chance to win at a
/// confidence level, as reports ask for them.
public struct Lift: Hashable, Sendable {
    public let scale: LiftScale
    /// The estimate, its variance and Welch-Satterthwaite degrees of freedom; its `devices` are
    /// the units in both groups, `n1 + n2`, the sample size of the sequential test.
    let effect: TreatmentEffect

    public var estimate: Double { effect.estimate }
    public var standardError: Double { effect.standardError }

    /// Throws `tooFewUnits` when a group has fewer than two units, `zeroBaseline` for a
    /// relative lift over a control mean of 0, and `zeroVariance` when either group's variance
    /// is 0 (gbstats declines the same cases; use `ProportionComparison.newcombeInterval` there).
    public init(variant: MetricSummary, control: MetricSummary, scale: LiftScale) throws(StatisticsError) {
        effect = try TreatmentEffect(control: ArmEstimate(control), treatment: ArmEstimate(variant),
                                     scale: scale.effectScale, zeroBaselineOnEveryScale: false)
        self.scale = scale
    }

    // MARK: Fixed horizon

    /// Welch's two-sided t test, valid when the sample size was fixed in advance and the data
    /// are looked at once: `t = d / se` on the degrees of freedom, interval `d +- t_{1-a/2} se`.
    /// Matches gbstats' `TwoSidedTTest` (see `EffectInference.welch`).
    public func fixedHorizon(confidence: Double = 0.95) -> LiftTestResult {
        precondition(confidence > 0 && confidence < 1, "confidence must be in (0, 1)")
        return LiftTestResult(estimate: estimate, effect.fixedHorizon(alpha: 1 - confidence))
    }

    // MARK: Sequential

    /// GrowthBook's default tuning parameter `N*`: the total sample size at which the
    /// confidence sequence is tightest.
    public static let defaultSequentialTuning = 5000.0

    /// Always-valid inference: a confidence sequence and its p-value, which stay valid however
    /// often the data are looked at and whenever the experiment is stopped; `N = n1 + n2` units.
    /// The formulas are in `EffectInference.confidenceSequence`.
    public func sequential(confidence: Double = 0.95, tuning: Double = Lift.defaultSequentialTuning) -> LiftTestResult {
        precondition(confidence > 0 && confidence < 1, "confidence must be in (0, 1)")
        return LiftTestResult(estimate: estimate, effect.sequential(alpha: 1 - confidence, tuning: tuning))
    }

    // MARK: Bayesian

    /// Posterior probability that the lift is positive, under gbstats' default flat
    /// (improper) prior on the lift: the posterior is `Normal(d, Var d)`, so the chance to win
    /// is `Phi(d / se)`.
    public var chanceToWin: Double {
        Normal.cdf(estimate / standardError)
    }

    /// Central credible interval of the same posterior: `d +- z_{1-a/2} se`.
    public func credibleInterval(confidence: Double = 0.95) -> ConfidenceInterval {
        let halfWidth = twoSidedCriticalValue(confidence: confidence) * standardError
        return ConfidenceInterval(lower: estimate - halfWidth, upper: estimate + halfWidth)
    }
}
