/// The chance that a displayed notification reaches each stage of `FunnelStage.engagements`:
/// `actioned` counts any app-defined action, so it includes `replied`.
///
/// The simulator draws them nested, the way iOS offers them: action buttons show only on an
/// expanded notification and a reply is one of the actions, and a notification ends opened,
/// dismissed or neither. So `replied <= actioned <= expanded` and `opened + dismissed <= 1`;
/// each rate is then exactly the share of displayed notifications with that engagement.
public struct EngagementRates: EngagementStageValues, Sendable, Hashable, CustomStringConvertible {
    public var expanded: Double
    public var actioned: Double
    public var opened: Double
    public var dismissed: Double
    public var replied: Double

    public init(expanded: Double, actioned: Double, opened: Double, dismissed: Double, replied: Double = 0) {
        self.expanded = expanded
        self.actioned = actioned
        self.opened = opened
        self.dismissed = dismissed
        self.replied = replied
    }

    public static let zero = EngagementRates(expanded: 0, actioned: 0, opened: 0, dismissed: 0)

    /// Why the rates cannot be drawn as described above, or nil when they can.
    public var problem: String? {
        for stage in FunnelStage.engagements where !(self[stage] >= 0 && self[stage] <= 1) {
            return "\(stage.name) rate \(self[stage]) is not a probability"
        }
        if actioned > expanded { return "actioned rate \(actioned) exceeds expanded rate \(expanded)" }
        if replied > actioned { return "replied rate \(replied) exceeds actioned rate \(actioned)" }
        if opened + dismissed > 1 { return "opened and dismissed rates add up to more than 1" }
        return nil
    }

    /// Each rate multiplied by the matching factor of `lift`.
    public func applying(_ lift: EngagementLift) -> EngagementRates {
        EngagementRates(expanded: expanded * lift.expanded, actioned: actioned * lift.actioned,
                        opened: opened * lift.opened, dismissed: dismissed * lift.dismissed,
                        replied: replied * lift.replied)
    }

    /// The rate of the stages outside `FunnelStage.engagements`.
    public static let otherStages = 0.0

    public var description: String {
        FunnelStage.engagements.map { "\($0.name)=\(self[$0])" }.joined(separator: " ")
    }
}

/// How much more (or less) often a rich notification gets each engagement than a plain one of the
/// same category: the rich rate is the plain rate times the factor.
public struct EngagementLift: EngagementStageValues, Sendable, Hashable {
    public var expanded: Double
    public var actioned: Double
    public var opened: Double
    public var dismissed: Double
    public var replied: Double

    public init(expanded: Double = 1, actioned: Double = 1, opened: Double = 1, dismissed: Double = 1,
                replied: Double = 1) {
        self.expanded = expanded
        self.actioned = actioned
        self.opened = opened
        self.dismissed = dismissed
        self.replied = replied
    }

    /// Rich and plain engage alike.
    public static let none = EngagementLift()

    /// The factor of the stages outside `FunnelStage.engagements`.
    public static let otherStages = 1.0
}

/// A value for each stage of `FunnelStage.engagements` (a rate, a lift factor), read by stage.
public protocol EngagementStageValues {
    var expanded: Double { get }
    var actioned: Double { get }
    var opened: Double { get }
    var dismissed: Double { get }
    var replied: Double { get }
    /// What the stages outside `FunnelStage.engagements` read as.
    static var otherStages: Double { get }
}

extension EngagementStageValues {
    public subscript(stage: FunnelStage) -> Double {
        switch stage {
        case .expanded: expanded
        case .actioned: actioned
        case .opened: opened
        case .dismissed: dismissed
        case .replied: replied
        default: Self.otherStages
        }
    }
}
