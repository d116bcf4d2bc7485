import Foundation

/// CUPED (Deng, Xu, Kohavi and Walker 2013): a treatment and its control, each arm's metric
/// adjusted by the same metric measured on the same devices before the experiment started.
///
/// For a mean metric (every `n = n' = 1`) this is gbstats 0.8.0's `RegressionAdjustedStatistic`
/// with `compute_theta`: per arm `ybar - theta cbar`, per-device variance
/// `s_y^2 + theta^2 s_c^2 - 2 theta s_yc`, and `theta = s_yc / s_c^2` from the two arms pooled
/// into one sample.
///
/// engage's metrics are ratios, which gbstats 0.8.0 does not adjust. The same regression is
/// applied to the delta-method linearisation of the ratio (Deng, Knoblich and Lu 2018, "Applying
/// the Delta method in metric analytics", KDD: per-device linearised values stand in for the
/// ratio, and CUPED applies to them): with `R = sum x / sum n` and
/// `R' = sum x' / sum n'`, each device's influence on them is
///
///     u = (x - R n) / nbar        w = (x' - R' n') / n'bar
///
/// and the adjusted arm mean is `R - theta R'` (gbstats' form; `ArmEstimate.centredMean` adds
/// back `theta R'_pooled` for the log ratio), with per-device variance `Var(u - theta w)` and
/// `theta = Cov(u, w) / Var(w)` over both arms pooled (each linearised at the pooled ratios).
/// Every variance is a quadratic form in the sample covariances of `(x, n, x', n')`, so only
/// sums are needed. A device without history (`x' = n' = 0`) has `w = 0`: it is kept, with
/// covariate 0, as gbstats does. A plain-number covariate `c` is `x' = c, n' = 1`.
///
/// As in gbstats, theta is 0, and the estimates are the unadjusted ones, when the pooled
/// covariate or metric has no variance; engage also falls back when either arm has no
/// pre-period denominator at all (its `R'` would be undefined).
public struct RegressionAdjustment: Hashable, Sendable {
    /// The regression coefficient of the metric on its covariate; 0 when not applied.
    public let theta: Double
    public let control: ArmEstimate
    public let treatment: ArmEstimate
    /// The same arms without the adjustment (`theta = 0`).
    public let unadjustedControl: ArmEstimate
    public let unadjustedTreatment: ArmEstimate

    public init(control: AdjustedRatioMoments, treatment: AdjustedRatioMoments) {
        let theta = Self.pooledTheta(control, treatment)
        let shift = theta * (control.pre + treatment.pre).ratio
        self.theta = theta
        self.control = Self.arm(control, theta: theta, shift: shift)
        self.treatment = Self.arm(treatment, theta: theta, shift: shift)
        unadjustedControl = ArmEstimate(control.post)
        unadjustedTreatment = ArmEstimate(treatment.post)
    }

    /// Whether the covariate changed anything.
    public var isApplied: Bool { theta != 0 }

    /// Gradients of the post ratio `xbar / nbar` and the pre ratio `x'bar / n'bar` with respect
    /// to the four per-device means.
    private static func gradients(_ covariance: DeviceCovariance) -> (post: [Double], pre: [Double]) {
        let m = covariance.means
        let post = m[1] == 0 ? [0.0, 0, 0, 0] : [1 / m[1], -m[0] / (m[1] * m[1]), 0, 0]
        let pre = m[3] == 0 ? [0.0, 0, 0, 0] : [0, 0, 1 / m[3], -m[2] / (m[3] * m[3])]
        return (post, pre)
    }

    private static func pooledTheta(_ a: AdjustedRatioMoments, _ b: AdjustedRatioMoments) -> Double {
        guard a.pre.denominatorSum > 0, b.pre.denominatorSum > 0, a.post.devices + b.post.devices > 1 else { return 0 }
        let pooled = DeviceCovariance(a + b)
        let (post, pre) = gradients(pooled)
        let preVariance = pooled.variance(pre)
        guard preVariance > 0, pooled.variance(post) > 0 else { return 0 }
        return pooled.bilinear(post, pre) / preVariance
    }

    /// `shift` is `theta R'_pooled`, which puts the adjusted mean back at the metric's level.
    private static func arm(_ moments: AdjustedRatioMoments, theta: Double, shift: Double) -> ArmEstimate {
        guard theta != 0 else { return ArmEstimate(moments.post) }
        let covariance = DeviceCovariance(moments)
        let (post, pre) = gradients(covariance)
        let combined = (0..<4).map { post[$0] - theta * pre[$0] }
        let unadjusted = moments.post.ratio
        let adjusted = unadjusted - theta * moments.pre.ratio
        return ArmEstimate(
            devices: moments.post.devices,
            mean: adjusted,
            unadjustedMean: unadjusted,
            variance: moments.post.devices > 1 && covariance.means[1] != 0 ? covariance.variance(combined) : 0,
            centredMean: adjusted + shift)
    }
}
