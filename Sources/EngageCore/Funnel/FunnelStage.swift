/// A step of a notification's funnel, which a notification reaches or not: the one declaration
/// of what engage counts. The read model keeps a column per stage (`isKeptPerBucket`), the report
/// and the experiment results write one field per stage, and `EngagementMetric` divides one
/// stage by another; all of them loop over `allCases` rather than naming stages.
///
/// The order of the cases is the order of every output (JSON objects, CSV rows, SQL columns) and
/// the lane of the stage in `FunnelCounts`; new stages go at the end of their group, with a
/// migration adding their column.
public enum FunnelStage: Int, Sendable, Hashable, CaseIterable {
    /// Every notification with at least one event.
    case notifications
    case delivered
    case displayed
    /// Displayed rich, the strategy's own success.
    case richDisplayed
    /// Long-pressed or pulled down.
    case expanded
    /// Some app-defined action (neither open nor dismiss) was taken.
    case actioned
    /// The user tapped the notification (the default action).
    case opened
    case dismissed
    /// The user replied through a text input action.
    case replied

    /// The wire name: JSON keys, CSV fields and the read model's columns.
    public var name: String {
        switch self {
        case .notifications: "notifications"
        case .delivered: "delivered"
        case .displayed: "displayed"
        case .richDisplayed: "rich_displayed"
        case .expanded: "expanded"
        case .actioned: "actioned"
        case .opened: "opened"
        case .dismissed: "dismissed"
        case .replied: "replied"
        }
    }

    /// For people, as a metric's definition reads it ("custom action / displayed").
    public var label: String {
        switch self {
        case .richDisplayed: "displayed rich"
        case .actioned: "custom action"
        default: name
        }
    }

    /// Whether the engagement read model keeps a column for the stage. `richDisplayed` is not
    /// kept: a bucket's presentation already says whether its notifications were shown rich.
    public var isKeptPerBucket: Bool { self != .richDisplayed }

    /// The stages the engagement read model keeps, in column order.
    public static let keptPerBucket = allCases.filter(\.isKeptPerBucket)

    /// The stages a displayed notification can reach: the numerators of the per-displayed metrics.
    public static let engagements = allCases.filter { stage in
        EngagementMetric.perDisplayed.contains { $0.numerator == stage }
    }

    /// The stages no metric divides (`notifications` and the denominators), kept per bucket:
    /// the counts the report lists before its rates, which show the numerators.
    public static let reportTotals = keptPerBucket.filter { stage in
        !EngagementMetric.allCases.contains { $0.numerator == stage }
    }
}
