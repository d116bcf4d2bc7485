/// One stratum (a category) of a stratified comparison: the variant's (rich) and the control's
/// (plain) notifications, summarised as `Group`.
public struct ComparedStratum<Group: Hashable & Sendable>: Hashable, Sendable {
    public let name: String
    public let variant: Group
    public let control: Group

    public init(name: String, variant: Group, control: Group) {
        self.name = name
        self.variant = variant
        self.control = control
    }
}

/// A stratum's successes out of trials on each side.
public typealias Stratum = ComparedStratum<Proportion>

/// A stratum's buckets of device moments on each side (see `counts` for its pooled counts).
public typealias ClusteredStratum = ComparedStratum<DeviceMoments>

extension ComparedStratum where Group == Proportion {
    /// Why it cannot contribute, or nil when both groups have trials.
    var exclusion: ExcludedStratum.Reason? {
        ExcludedStratum.Reason(variantTrials: variant.trials, controlTrials: control.trials)
    }
}

/// A stratum left out of a summary or a test, and why; reports list them.
public struct ExcludedStratum: Hashable, Sendable {
    public enum Reason: String, Hashable, Sendable {
        /// No trials on either side.
        case noTrials = "no_trials"
        /// No variant (rich) trials.
        case noVariantTrials = "no_variant_trials"
        /// No control (plain) trials.
        case noControlTrials = "no_control_trials"
        /// Every trial a success, or none (in both groups together): the stratum says nothing
        /// about an odds ratio (Breslow-Day).
        case degenerateMargins = "degenerate_margins"
        /// A group with no successes or only successes: its device-clustered variance is 0 or
        /// its log rate undefined (device-clustered homogeneity test).
        case zeroCell = "zero_cell"

        init?(variantTrials: Int, controlTrials: Int) {
            switch (variantTrials > 0, controlTrials > 0) {
            case (true, true): return nil
            case (false, false): self = .noTrials
            case (false, true): self = .noVariantTrials
            case (true, false): self = .noControlTrials
            }
        }
    }

    public let name: String
    public let reason: Reason

    public init(name: String, reason: Reason) {
        self.name = name
        self.reason = reason
    }
}
