/// Funnel counts with the app-defined actions taken, per action ID: what one bucket of the
/// engagement read model holds, what one notification adds to it, and one presentation's side of
/// a report group.
public struct EngagementCounts: Sendable, Hashable, AdditiveArithmetic {
    public var funnel: FunnelCounts
    /// Notifications per app-defined action ID; IDs with 0 are left out (written only here and in
    /// EngageCore, which keep that true: `add` does not filter its left side).
    public internal(set) var actions: [String: Int]

    public init(funnel: FunnelCounts = FunnelCounts(), actions: [String: Int] = [:]) {
        self.funnel = funnel
        self.actions = withoutZeros(actions)
    }

    public subscript(stage: FunnelStage) -> Int {
        get { funnel[stage] }
        set { funnel[stage] = newValue }
    }

    public static let zero = EngagementCounts()

    public static func + (a: EngagementCounts, b: EngagementCounts) -> EngagementCounts {
        EngagementCounts(funnel: a.funnel + b.funnel, actions: addCounts(a.actions, b.actions, sign: 1))
    }

    /// `self + other` in place, without copying the actions of a bucket's running sum.
    public mutating func add(_ other: EngagementCounts) {
        funnel += other.funnel
        addCounts(&actions, other.actions, sign: 1)
    }

    public static func - (a: EngagementCounts, b: EngagementCounts) -> EngagementCounts {
        EngagementCounts(funnel: a.funnel - b.funnel, actions: addCounts(a.actions, b.actions, sign: -1))
    }
}
