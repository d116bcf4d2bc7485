import Foundation

/// A variant's rate against a control's: `p1` is the variant, `p2` the control.
public struct ProportionComparison: Hashable, Sendable {
    public let variant: Proportion
    public let control: Proportion

    public init(variant: Proportion, control: Proportion) {
        self.variant = variant
        self.control = control
    }

    /// Absolute lift `p1 - p2`.
    public var absoluteDifference: Double { variant.rate - control.rate }

    /// Newcombe's hybrid score interval for `p1 - p2` (method 10 of Newcombe 1998, Stat Med
    /// 17:873), built from each group's Wilson interval `[l_i, u_i]`:
    ///
    ///     lower = d - sqrt((p1 - l1)^2 + (u2 - p2)^2)
    ///     upper = d + sqrt((u1 - p1)^2 + (p2 - l2)^2)
    ///
    /// It needs no normal approximation of the difference, so it stays sensible for small
    /// counts and for rates of 0 or 1, and it always lies within [-1, 1].
    public func newcombeInterval(confidence: Double = 0.95) -> ConfidenceInterval {
        let p1 = variant.rate
        let p2 = control.rate
        let first = variant.wilsonInterval(confidence: confidence)
        let second = control.wilsonInterval(confidence: confidence)
        let difference = p1 - p2
        let below = hypot(p1 - first.lower, second.upper - p2)
        let above = hypot(first.upper - p1, p2 - second.lower)
        return ConfidenceInterval(lower: max(-1, difference - below), upper: min(1, difference + above))
    }

    /// True when the normal approximations behind `lift`, its p-values and the chance to win
    /// should not be trusted: either group has fewer than 30 trials, or fewer than 5 successes,
    /// or fewer than 5 failures. (The usual `n p >= 5 and n (1 - p) >= 5` rule, plus a floor on
    /// `n` for the variance estimate.) Wilson and Newcombe intervals remain valid regardless.
    public var isSmallSample: Bool {
        [variant, control].contains { group in
            group.trials < Self.minimumTrials
                || group.successes < Self.minimumOutcomes
                || group.failures < Self.minimumOutcomes
        }
    }

    /// The small-sample rule's thresholds.
    public static let minimumTrials = 30
    public static let minimumOutcomes = 5

    /// Lift of the variant over the control on either scale, with gbstats' estimators.
    public func lift(_ scale: LiftScale) throws(StatisticsError) -> Lift {
        try Lift(variant: variant.summary, control: control.summary, scale: scale)
    }

    /// Two-sided p-value of the classic pooled two-proportion z test of `p1 == p2`:
    /// `z = (p1 - p2) / sqrt(p (1 - p) (1/n1 + 1/n2))` with the pooled rate `p`.
    /// (`lift(_:).fixedHorizon()` is the unpooled Welch test that GrowthBook reports.)
    public func pooledZTestPValue() throws(StatisticsError) -> Double {
        guard variant.trials > 0, control.trials > 0 else {
            throw StatisticsError(.tooFewUnits, detail: "n1=\(variant.trials) n2=\(control.trials)")
        }
        let n1 = Double(variant.trials)
        let n2 = Double(control.trials)
        let pooled = Double(variant.successes + control.successes) / (n1 + n2)
        let standardError = (pooled * (1 - pooled) * (1 / n1 + 1 / n2)).squareRoot()
        guard standardError > 0 else {
            throw StatisticsError(.zeroVariance, detail: "pooled rate \(pooled)")
        }
        let z = absoluteDifference / standardError
        return 2 * Normal.survival(abs(z))
    }
}
