import Foundation

/// Everything the statistics say about one treatment against control on one device-clustered
/// ratio metric, on every scale: what an experiment result shows and decides from.
public struct RatioMetricComparison: Hashable, Sendable {
    public struct Settings: Hashable, Sendable {
        /// The family's error rate.
        public var alpha: Double
        /// N*, the devices (both arms) at which the confidence sequence is tightest.
        public var sequentialTuning: Double
        /// How the treatments of one experiment share `alpha`.
        public var correction: MultipleTesting
        /// False for a metric where lower is better (dismissals): chance to win and risk turn
        /// around, as gbstats' `inverse`.
        public var higherIsBetter: Bool

        public init(alpha: Double = 0.05, sequentialTuning: Double = Lift.defaultSequentialTuning,
                    correction: MultipleTesting = .none, higherIsBetter: Bool = true) {
            self.alpha = alpha
            self.sequentialTuning = sequentialTuning
            self.correction = correction
            self.higherIsBetter = higherIsBetter
        }
    }

    /// One scale's figures, or why there are none.
    public enum Outcome: Hashable, Sendable {
        case estimated(EffectSummary)
        /// gbstats shows p = 1 and chance to win 0.5 here; engage names the reason instead.
        case notEnoughData(StatisticsError)

        public var summary: EffectSummary? {
            if case .estimated(let summary) = self { summary } else { nil }
        }
    }

    public struct EffectSummary: Hashable, Sendable {
        public let effect: TreatmentEffect
        public let fixedHorizon: IntervalTest
        public let sequential: IntervalTest
        public let posterior: EffectPosterior
        /// With CUPED, `1 - Var(adjusted effect) / Var(unadjusted effect)` on this scale (negative
        /// if the covariate made it worse); nil without a covariate or when the unadjusted effect
        /// has no variance.
        public let varianceReduction: Double?
    }

    public let control: ArmEstimate
    public let treatment: ArmEstimate
    /// The adjustment, when the arms came with pre-period moments.
    public let regressionAdjustment: RegressionAdjustment?
    public let absolute: Outcome
    public let relative: Outcome
    public let logRatio: Outcome

    /// Without a covariate.
    public init(control: RatioMoments, treatment: RatioMoments, settings: Settings = Settings()) {
        self.init(control: ArmEstimate(control), treatment: ArmEstimate(treatment), adjustment: nil, settings: settings)
    }

    /// With CUPED.
    public init(control: AdjustedRatioMoments, treatment: AdjustedRatioMoments, settings: Settings = Settings()) {
        let adjustment = RegressionAdjustment(control: control, treatment: treatment)
        self.init(control: adjustment.control, treatment: adjustment.treatment, adjustment: adjustment,
                  settings: settings)
    }

    private init(control: ArmEstimate, treatment: ArmEstimate, adjustment: RegressionAdjustment?, settings: Settings) {
        self.control = control
        self.treatment = treatment
        regressionAdjustment = adjustment
        func outcome(_ scale: EffectScale) -> Outcome {
            do {
                let effect = try TreatmentEffect(control: control, treatment: treatment, scale: scale)
                var reduction: Double?
                if let adjustment, let unadjusted = try? TreatmentEffect(
                    control: adjustment.unadjustedControl, treatment: adjustment.unadjustedTreatment, scale: scale) {
                    reduction = 1 - effect.variance / unadjusted.variance
                }
                return .estimated(EffectSummary(
                    effect: effect,
                    fixedHorizon: effect.fixedHorizon(alpha: settings.alpha, correction: settings.correction),
                    sequential: effect.sequential(alpha: settings.alpha, tuning: settings.sequentialTuning,
                                                  correction: settings.correction),
                    posterior: effect.posterior(alpha: settings.alpha, higherIsBetter: settings.higherIsBetter),
                    varianceReduction: reduction))
            } catch {
                return .notEnoughData(error)
            }
        }
        absolute = outcome(.absolute)
        relative = outcome(.relative)
        logRatio = outcome(.logRatio)
    }

    public func outcome(_ scale: EffectScale) -> Outcome {
        switch scale {
        case .absolute: absolute
        case .relative: relative
        case .logRatio: logRatio
        }
    }

    /// Each treatment against the control, Bonferroni-corrected when there are several
    /// (`settings.correction` is replaced).
    public static func family(control: RatioMoments, treatments: [RatioMoments],
                              settings: Settings = Settings()) -> [RatioMetricComparison] {
        let corrected = correctedSettings(settings, treatments: treatments.count)
        return treatments.map { RatioMetricComparison(control: control, treatment: $0, settings: corrected) }
    }

    /// With CUPED; theta is estimated for each pair, as gbstats does.
    public static func family(control: AdjustedRatioMoments, treatments: [AdjustedRatioMoments],
                              settings: Settings = Settings()) -> [RatioMetricComparison] {
        let corrected = correctedSettings(settings, treatments: treatments.count)
        return treatments.map { RatioMetricComparison(control: control, treatment: $0, settings: corrected) }
    }

    private static func correctedSettings(_ settings: Settings, treatments: Int) -> Settings {
        var corrected = settings
        corrected.correction = treatments > 1 ? .bonferroni(comparisons: treatments) : .none
        return corrected
    }
}
