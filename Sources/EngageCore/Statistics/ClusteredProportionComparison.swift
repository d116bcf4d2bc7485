import Foundation

/// A variant's rate against a control's with the device as the unit (one stratum's row, or a
/// crude total kept as its own buckets).
///
/// With `e_j = x_j - p n_j` per device and `e_j = 0` for a device absent from a bucket:
///
///     Var(p1 - p2)      = Var p1 + Var p2 - 2 Cov(p1, p2)
///     Var log(p1 / p2)  = Var p1 / p1^2 + Var p2 / p2^2 - 2 Cov(p1, p2) / (p1 p2)
///     Var p             = sum e_j^2 / n^2,   Cov(p1, p2) = sum e_j1 e_j2 / (n1 n2)
///
/// (the delta method over devices; `DeviceClusteredRates`). With one notification per device
/// they are the binomial variance of the difference and Katz's variance of the log ratio.
public struct ClusteredProportionComparison: Hashable, Sendable {
    public let variant: DeviceMoments
    public let control: DeviceMoments
    /// Devices with notifications on both sides (first: variant, second: control); nil when none.
    public let sharedDevices: DeviceCrossMoments?

    public init(variant: DeviceMoments, control: DeviceMoments, sharedDevices: DeviceCrossMoments? = nil) {
        self.variant = variant
        self.control = control
        self.sharedDevices = sharedDevices
    }

    /// As counts, notifications taken as independent.
    public var counts: ProportionComparison {
        ProportionComparison(variant: variant.proportion, control: control.proportion)
    }

    /// The counts' small-sample rule, or fewer than `minimumDevices` devices on a side: a
    /// variance taken over a handful of devices is rough however many notifications they got.
    public var isSmallSample: Bool {
        counts.isSmallSample || min(variant.devices, control.devices) < Self.minimumDevices
    }

    /// The fewest devices on a side for the clustered variance to be trusted (the usual rule of
    /// thumb for cluster-robust variances asks for a few dozen clusters).
    public static let minimumDevices = 30

    /// `p1 - p2 +- z sqrt(Var)` and the p-value of the same Wald statistic; the binomial variance
    /// beside it is `p1 q1 / n1 + p2 q2 / n2`. Throws `tooFewUnits` when a side has no trials and
    /// `zeroVariance` when the clustered variance is 0.
    public func difference(confidence: Double = 0.95) throws(StatisticsError) -> ClusteredEffect {
        try asStratified().mantelHaenszelRiskDifference(confidence: confidence)
            .relabelled(.deviceClustered)
    }

    /// `exp(log(p1 / p2) +- z sqrt(Var))` and the p-value of the same Wald statistic on the log
    /// scale; the binomial variance beside it is Katz's. Throws `tooFewUnits` when a side has no
    /// trials, `zeroBaseline` without control successes, `undefinedLogRatio` without variant
    /// successes.
    public func ratio(confidence: Double = 0.95) throws(StatisticsError) -> ClusteredEffect {
        try asStratified().mantelHaenszelRiskRatio(confidence: confidence)
            .relabelled(.deviceClustered)
    }

    /// A single stratum: its Mantel-Haenszel estimates are `p1 - p2` and `p1 / p2`, and their
    /// linearisations those above (the weight cancels).
    private func asStratified() throws(StatisticsError) -> ClusteredStratifiedComparison {
        guard variant.trials > 0, control.trials > 0 else {
            throw StatisticsError(.tooFewUnits, detail: "n1=\(variant.trials) n2=\(control.trials)")
        }
        let shared = sharedDevices.map { moments in
            [SharedDeviceMoments(first: BucketReference(stratum: "", arm: .variant),
                                 second: BucketReference(stratum: "", arm: .control), moments: moments)]
        } ?? []
        return try ClusteredStratifiedComparison(strata: [ClusteredStratum(name: "", variant: variant, control: control)],
                                                 sharedDevices: shared)
    }
}

extension ClusteredEffect {
    func relabelled(_ method: EffectMethod) -> ClusteredEffect {
        let effect = EffectEstimate(scale: effect.scale, method: method, estimate: effect.estimate,
                                    interval: effect.interval, confidence: effect.confidence, pValue: effect.pValue)
        return ClusteredEffect(effect: effect, variance: variance, binomialVariance: binomialVariance)
    }
}
