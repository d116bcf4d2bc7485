/// What CUPED did to one comparison: the regression coefficient and, on each scale, the
/// variance reduction `1 - Var(adjusted effect) / Var(unadjusted effect)`. A reduction of 0.3
/// means the interval is `sqrt(0.7)`, about 84 %, as wide as without the covariate: the same
/// precision with about 30 % fewer devices. 0 when the covariate explains nothing (theta 0);
/// negative only if the adjustment made the estimate noisier. Nil on a scale where either
/// effect has no variance (not enough data).
public struct ExperimentCupedResult: Sendable, Equatable {
    public var theta: Double
    /// On the log ratio of means, the scale decisions read.
    public var varianceReduction: Double?
    /// On gbstats' relative and absolute scales.
    public var relativeVarianceReduction: Double?
    public var absoluteVarianceReduction: Double?

    init(_ adjustment: RegressionAdjustment, adjusted: (control: ArmEstimate, variant: ArmEstimate)) {
        theta = adjustment.theta
        func reduction(_ scale: EffectScale) -> Double? {
            guard let with = try? TreatmentEffect(control: adjusted.control, treatment: adjusted.variant, scale: scale),
                  let without = try? TreatmentEffect(control: adjustment.unadjustedControl,
                                                     treatment: adjustment.unadjustedTreatment, scale: scale),
                  without.variance > 0 else { return nil }
            return 1 - with.variance / without.variance
        }
        varianceReduction = reduction(.logRatio)
        relativeVarianceReduction = reduction(.relative)
        absoluteVarianceReduction = reduction(.absolute)
    }
}

/// CUPED's pre-experiment window, `[from, to)` with `to` the experiment's start.
public struct ExperimentCupedWindow: Sendable, Equatable {
    public var from: Timestamp
    public var to: Timestamp
    public var days: Int
    /// Devices with a notification of the experiment's categories in the window (of any arm or
    /// none); the others count with covariate 0.
    public var devicesWithHistory: Int
}
