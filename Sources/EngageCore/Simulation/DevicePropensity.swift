import Foundation

/// How much people differ in how readily they engage, for as long as the simulation runs: each
/// device draws once a standard normal `z` (from its own random stream, so it depends only on the
/// seed and the device) and keeps the log-odds shift `s = spread * z` for every notification, rich
/// or plain, before the experiment and during it. That persistence is what makes a device's
/// engagement correlated across its notifications (the reason intervals use the device as the
/// unit) and what a pre-period covariate (CUPED) can find.
///
/// The shift moves every step of the nested funnel that `EngagementRates` describes, on the
/// log-odds scale, so the device's rates stay valid probabilities and stay nested:
/// - `expanded_d = L(logit(expanded) + s)`,
/// - `actioned_d = expanded_d * L(logit(actioned / expanded) + s)`,
/// - `replied_d = actioned_d * L(logit(replied / actioned) + s)`,
/// - `opened_d = L(logit(opened) + s)`,
/// - `dismissed_d = (1 - opened_d) * dismissed / (1 - opened)` (an engaged person opens more and
///   so dismisses less; among notifications not opened the dismissed share is unchanged),
///
/// where `L` is the logistic function. A rate of 0 or 1 stays 0 or 1. The scenario's configured
/// rates are those of a device with `s = 0`; the population's rates, what a report over many
/// devices estimates, are the averages over `z` (`expectedRates`), which the rich-over-plain lift
/// does not carry over exactly: the truth a report's interval should cover is
/// `SimulationGroundTruth.expectedRates`, not `configuredRates`.
public struct DevicePropensity: Sendable, Equatable {
    /// The standard deviation of the devices' shifts on the log-odds scale; 0: all devices alike.
    public var spread: Double

    public init(spread: Double) {
        self.spread = spread
    }

    /// Every device engages at the configured rates.
    public static let none = DevicePropensity(spread: 0)

    /// The log-odds shift of the device with standard normal draw `z`.
    public func shift(z: Double) -> Double {
        spread * z
    }

    /// The rates of a device with log-odds shift `shift` (the configured ones for 0).
    public static func rates(_ rates: EngagementRates, shift: Double) -> EngagementRates {
        guard shift != 0 else { return rates }
        let expanded = shifted(rates.expanded, shift)
        let actioned = expanded * shifted(share(rates.actioned, of: rates.expanded), shift)
        let replied = actioned * shifted(share(rates.replied, of: rates.actioned), shift)
        let opened = shifted(rates.opened, shift)
        let dismissed = (1 - opened) * share(rates.dismissed, of: 1 - rates.opened)
        return EngagementRates(expanded: expanded, actioned: actioned, opened: opened, dismissed: dismissed,
                               replied: replied)
    }

    /// The population's rates: each device's rates averaged over the normal distribution of `z`.
    /// Computed by the trapezoidal rule on z in [-12, 12] in steps of 1/64, which for these smooth
    /// integrands against the normal density is exact to about 1e-15.
    public func expectedRates(_ rates: EngagementRates) -> EngagementRates {
        guard spread != 0 else { return rates }
        let step = 1.0 / 64
        let normalization = step / (2 * Double.pi).squareRoot()
        var sum = EngagementRates.zero
        for k in -768...768 {
            let z = Double(k) * step
            let weight = exp(-z * z / 2) * normalization * (abs(k) == 768 ? 0.5 : 1)
            let device = DevicePropensity.rates(rates, shift: shift(z: z))
            sum.expanded += weight * device.expanded
            sum.actioned += weight * device.actioned
            sum.opened += weight * device.opened
            sum.dismissed += weight * device.dismissed
            sum.replied += weight * device.replied
        }
        return sum
    }

    /// Why the propensity cannot be simulated, or nil when it can.
    var problem: String? {
        spread >= 0 && spread.isFinite ? nil : "the propensity spread must be finite and not negative"
    }

    /// `part / whole`, 0 when the whole is 0.
    private static func share(_ part: Double, of whole: Double) -> Double {
        whole > 0 ? min(1, part / whole) : 0
    }

    /// `p` moved by `shift` on the log-odds scale; 0 and 1 stay where they are.
    private static func shifted(_ p: Double, _ shift: Double) -> Double {
        guard p > 0 else { return 0 }
        guard p < 1 else { return 1 }
        return 1 / (1 + exp(-(log(p / (1 - p)) + shift)))
    }
}
