import Foundation

/// The relative lift decisions are made on: the log of the ratio of the arms' means, with its
/// delta-method variance over devices (`TreatmentEffect` on `.logRatio`, gbstats'
/// `RatioStatistic` moments with divisor `D - 1`), read back as a relative lift, `exp(x) - 1`,
/// for the estimate and every interval bound.
///
/// Why not gbstats' relative interval: the ratio of two means is skewed to the right, and the
/// delta method's interval around it is symmetric, so a harmless arm's interval falls wholly below
/// 0 far more often than wholly above it (a "must not decrease" guardrail blocks it about twice
/// as often as its nominal one-sided rate, and a false ship almost never happens). On the log
/// scale the sampling distribution is close to symmetric and the two errors split evenly
/// (`ExperimentCalibration`, BENCHMARKS.md). The read-back interval is not symmetric around the
/// estimate and never goes below -100%. p-values are the log-scale tests' own: a monotone map
/// leaves them and the sign of every bound unchanged.
public struct ExperimentDecisionLift: Sendable, Equatable {
    /// `exp(d) - 1`, the relative lift of the means.
    public var estimate: Double
    /// `d = ln(m_variant / m_control)`.
    public var logEstimate: Double
    /// Standard error of `logEstimate`.
    public var logStandardError: Double
    /// Welch-Satterthwaite, as gbstats computes them for its scales.
    public var degreesOfFreedom: Double
    /// Welch's test for one planned look; interval read back as a relative lift.
    public var fixedHorizon: LiftTestResult
    /// The always-valid confidence sequence; nil for observational comparisons.
    public var sequential: LiftTestResult?
    /// Posterior probability that the variant is better (lower for `dismiss`), flat prior on `d`.
    public var chanceToWin: Double

    /// `confidence` is the intervals' level, already `1 - correction.perComparison(alpha)`;
    /// p-values are adjusted by `correction` to belong to them.
    init(_ effect: TreatmentEffect, metric: ExperimentMetric, confidence: Double, tuning: Double,
         correction: MultipleTesting = .none) {
        let alpha = 1 - confidence
        estimate = effect.relativeLift(effect.estimate)
        logEstimate = effect.estimate
        logStandardError = effect.standardError
        degreesOfFreedom = effect.degreesOfFreedom
        let readBack = { (test: IntervalTest) in
            LiftTestResult(estimate: effect.relativeLift(effect.estimate), interval: effect.relativeLift(test.interval),
                           pValue: test.pValue, correction: correction)
        }
        fixedHorizon = readBack(effect.fixedHorizon(alpha: alpha))
        sequential = readBack(effect.sequential(alpha: alpha, tuning: tuning))
        chanceToWin = effect.posterior(alpha: alpha, higherIsBetter: metric.higherIsBetter).chanceToWin
    }

    /// The effect on the log scale between two arms' device-level sums; throws "not enough
    /// data" (`StatisticsError`) where `TreatmentEffect` does.
    static func effect(variant: ExperimentArmTally, control: ExperimentArmTally,
                       metric: ExperimentMetric) throws(StatisticsError) -> TreatmentEffect {
        try TreatmentEffect(control: ArmEstimate(control.ratioMoments(metric)),
                            treatment: ArmEstimate(variant.ratioMoments(metric)), scale: .logRatio)
    }
}
