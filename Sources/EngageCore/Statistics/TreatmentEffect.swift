import Foundation

/// The scale a treatment's effect over control is measured on.
public enum EffectScale: String, Hashable, Sendable, CaseIterable {
    /// `m_t - m_c`.
    case absolute
    /// `(m_t - m_c) / m_c`, gbstats' default; its delta-method interval is symmetric around the
    /// estimate, which a ratio's sampling distribution is not (it is skewed to the right), so
    /// its false alarms fall mostly below 0.
    case relative
    /// `ln(m_t / m_c)`, with the delta-method variance of each log mean: symmetric on this scale,
    /// so errors split evenly between the sides. Read back as a relative lift with
    /// `TreatmentEffect.relativeLift(_:)`. Not a gbstats scale.
    case logRatio = "log_ratio"
}

/// How a family of comparisons (several treatments against one control) keeps its error rate.
public enum MultipleTesting: Hashable, Sendable {
    /// Each comparison at `alpha`, as gbstats reports them.
    case none
    /// Each of `comparisons` at `alpha / comparisons`, with the p-value multiplied to match
    /// (`min(1, comparisons p)`), so that `p < alpha` exactly when the interval excludes 0.
    case bonferroni(comparisons: Int)

    /// The per-comparison level for a family level `alpha`.
    public func perComparison(_ alpha: Double) -> Double {
        switch self {
        case .none: alpha
        case .bonferroni(let comparisons): alpha / Double(max(1, comparisons))
        }
    }

    /// The p-value that belongs to an interval at `perComparison(alpha)`.
    public func adjust(_ pValue: Double) -> Double {
        switch self {
        case .none: pValue
        case .bonferroni(let comparisons): min(1, pValue * Double(max(1, comparisons)))
        }
    }

    /// "bonferroni x2", or "none": for labels beside every adjusted figure.
    public var label: String {
        switch self {
        case .none: "none"
        case .bonferroni(let comparisons): "bonferroni x\(comparisons)"
        }
    }
}

/// An interval with the p-value that belongs to it.
public struct IntervalTest: Hashable, Sendable {
    /// On the effect's scale, at level `1 - correction.perComparison(alpha)`.
    public let interval: ConfidenceInterval
    /// Below `alpha` exactly when `interval` excludes 0: adjusted when the interval is.
    public let pValue: Double
    /// The p-value of this comparison alone (at the corrected level's tuning for a sequential test).
    public let unadjustedPValue: Double
    /// The family's level.
    public let alpha: Double
    public let correction: MultipleTesting
}

/// The effect of a treatment over control on one scale: an estimate, its variance and Welch
/// degrees of freedom, with the fixed-horizon, sequential and Bayesian summaries gbstats gives.
///
/// - absolute, relative: gbstats 0.8.0's `frequentist_diff` and `frequentist_variance`; a
///   relative effect divides by the control's unadjusted mean (`u`) and its variance is
///   `v_t / (u_c^2 D_t) + v_c u_t^2 / (u_c^4 D_c)`. The degrees of freedom are Welch-Satterthwaite
///   on the arms' `v / D`, on both scales, as gbstats.
/// - logRatio: `ln m_t - ln m_c` with variance `v_t / (D_t m_t^2) + v_c / (D_c m_c^2)` and
///   Welch-Satterthwaite degrees of freedom on those two terms; under CUPED `m` is the adjusted
///   mean at the metric's level (`ArmEstimate.centredMean`).
///
/// `v` are the arms' per-device variances, `D` their devices, `m` their (adjusted) means.
public struct TreatmentEffect: Hashable, Sendable {
    public let scale: EffectScale
    public let estimate: Double
    /// Variance of `estimate`.
    public let variance: Double
    public let degreesOfFreedom: Double
    /// Devices in both arms: the sample size `N` of the sequential test.
    public let devices: Int

    public var standardError: Double { variance.squareRoot() }

    /// Throws "not enough data" where gbstats returns its empty result (p = 1, chance to win
    /// 0.5): `tooFewUnits` when an arm has fewer than two devices, `zeroBaseline` when the
    /// control's mean is 0 (on every scale, as gbstats' frequentist tests), `zeroVariance` when
    /// an arm's variance is 0, and for the log ratio `nonPositiveMean` when an adjusted mean is not
    /// above 0.
    public init(control: ArmEstimate, treatment: ArmEstimate, scale: EffectScale) throws(StatisticsError) {
        try self.init(control: control, treatment: treatment, scale: scale, zeroBaselineOnEveryScale: true)
    }

    /// With `zeroBaselineOnEveryScale` false, a control mean of 0 is refused only on the scales
    /// that divide by it (relative, log ratio), as `Lift` does for rates.
    init(control: ArmEstimate, treatment: ArmEstimate, scale: EffectScale,
         zeroBaselineOnEveryScale: Bool) throws(StatisticsError) {
        guard control.devices >= 2, treatment.devices >= 2 else {
            throw StatisticsError(.tooFewUnits, detail: "control=\(control.devices) treatment=\(treatment.devices)")
        }
        if zeroBaselineOnEveryScale || scale != .absolute {
            guard control.mean != 0, control.unadjustedMean != 0 else {
                throw StatisticsError(.zeroBaseline)
            }
        }
        guard control.variance > 0, treatment.variance > 0 else {
            throw StatisticsError(.zeroVariance, detail: "control=\(control.variance) treatment=\(treatment.variance)")
        }
        if scale == .logRatio {
            let (levelControl, levelTreatment) = (control.centredMean, treatment.centredMean)
            guard levelControl > 0, levelTreatment > 0 else {
                throw StatisticsError(.nonPositiveMean, detail: "control=\(levelControl) treatment=\(levelTreatment)")
            }
            let logControl = control.variance / Double(control.devices) / pow(levelControl, 2)
            let logTreatment = treatment.variance / Double(treatment.devices) / pow(levelTreatment, 2)
            estimate = log(levelTreatment) - log(levelControl)
            variance = logControl + logTreatment
            degreesOfFreedom = Self.welchSatterthwaite(logControl, Double(control.devices), logTreatment,
                                                       Double(treatment.devices))
        } else {
            let moments = Self.differenceMoments(control: control, treatment: treatment, relative: scale == .relative)
            estimate = moments.estimate
            variance = moments.variance
            degreesOfFreedom = moments.degreesOfFreedom
        }
        devices = control.devices + treatment.devices
        self.scale = scale
    }

    /// gbstats' absolute or relative difference (`frequentist_diff`), its variance
    /// (`frequentist_variance`) and Welch's degrees of freedom (`TTest.dof`), unchecked.
    static func differenceMoments(control: ArmEstimate, treatment: ArmEstimate,
                                  relative: Bool) -> (estimate: Double, variance: Double, degreesOfFreedom: Double) {
        let dc = Double(control.devices)
        let dt = Double(treatment.devices)
        let perControl = control.variance / dc
        let perTreatment = treatment.variance / dt
        let dof = welchSatterthwaite(perControl, dc, perTreatment, dt)
        guard relative else {
            return (treatment.mean - control.mean, perTreatment + perControl, dof)
        }
        let base = control.unadjustedMean
        let variance = treatment.variance / (pow(base, 2) * dt)
            + control.variance * pow(treatment.unadjustedMean, 2) / (pow(base, 4) * dc)
        return ((treatment.mean - control.mean) / base, variance, dof)
    }

    /// `(a + b)^2 / (a^2 / (n_a - 1) + b^2 / (n_b - 1))` for the variance terms `a`, `b` of two
    /// groups of `n_a`, `n_b` units.
    static func welchSatterthwaite(_ a: Double, _ na: Double, _ b: Double, _ nb: Double) -> Double {
        pow(a + b, 2) / (pow(a, 2) / (na - 1) + pow(b, 2) / (nb - 1))
    }

    // MARK: Tests

    /// Welch's t test for one planned look (gbstats `TwoSidedTTest`).
    public func fixedHorizon(alpha: Double = 0.05, correction: MultipleTesting = .none) -> IntervalTest {
        let test = EffectInference.welch(estimate: estimate, variance: variance, degreesOfFreedom: degreesOfFreedom,
                                         alpha: correction.perComparison(alpha))
        return IntervalTest(interval: test.interval, pValue: correction.adjust(test.pValue),
                            unadjustedPValue: test.pValue, alpha: alpha, correction: correction)
    }

    /// The always-valid confidence sequence, tightest at `tuning` = N* devices (gbstats
    /// `SequentialTwoSidedTTest`). Under a correction the mixture is tuned for the corrected
    /// level, as gbstats would be if given that alpha.
    public func sequential(alpha: Double = 0.05, tuning: Double = Lift.defaultSequentialTuning,
                           correction: MultipleTesting = .none) -> IntervalTest {
        let test = EffectInference.confidenceSequence(estimate: estimate, variance: variance, units: devices,
                                                      alpha: correction.perComparison(alpha), tuning: tuning)
        return IntervalTest(interval: test.interval, pValue: correction.adjust(test.pValue),
                            unadjustedPValue: test.pValue, alpha: alpha, correction: correction)
    }

    /// gbstats' `EffectBayesianABTest` with its default flat (improper) prior.
    public func posterior(alpha: Double = 0.05, higherIsBetter: Bool = true) -> EffectPosterior {
        EffectPosterior(mean: estimate, standardDeviation: standardError, alpha: alpha, higherIsBetter: higherIsBetter)
    }

    /// A log-ratio value read as a relative lift, `exp(x) - 1`.
    public func relativeLift(_ value: Double) -> Double {
        precondition(scale == .logRatio, "only a log ratio reads back as a relative lift")
        return expm1(value)
    }

    /// A log-ratio interval read as a relative lift; it never goes below -100%.
    public func relativeLift(_ interval: ConfidenceInterval) -> ConfidenceInterval {
        ConfidenceInterval(lower: relativeLift(interval.lower), upper: relativeLift(interval.upper))
    }
}
