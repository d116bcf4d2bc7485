/// A rate of the funnel: notifications that reached `numerator` per notification that reached
/// `denominator`. The one declaration of the metrics the report compares between rich and plain
/// and the experiments compare between arms; both loop over `allCases` (or `perDisplayed`).
///
/// The engagement rates count per DISPLAYED notification (a notification never shown could not be
/// expanded, actioned, opened, replied to or dismissed through its banner); `richDisplay` is rich
/// displays per DELIVERED notification, the strategy's own success. The raw value is the wire
/// name (experiment definitions, results, report keys); the case order is the order of every
/// output and the metric's `lane`.
public enum EngagementMetric: String, Sendable, Hashable, CaseIterable {
    case expansion, action, open, reply, dismiss
    case richDisplay = "rich_display"

    /// What the rate counts.
    public var numerator: FunnelStage {
        switch self {
        case .expansion: .expanded
        case .action: .actioned
        case .open: .opened
        case .reply: .replied
        case .dismiss: .dismissed
        case .richDisplay: .richDisplayed
        }
    }

    /// What the rate is per.
    public var denominator: FunnelStage {
        self == .richDisplay ? .delivered : .displayed
    }

    /// Name for people: "any action".
    public var label: String {
        switch self {
        case .action: "any action"
        case .richDisplay: "rich display"
        default: rawValue
        }
    }

    /// "expanded / displayed", for labels.
    public var definition: String {
        numerator.label + " / " + denominator.label
    }

    /// Whether a higher rate is better (false for dismissals only).
    public var higherIsBetter: Bool { self != .dismiss }

    /// The metric's position in `allCases`: its lane in `MetricLanes`.
    public var lane: Int { Self.ordered.firstIndex(of: self)! }

    /// The engagement rates, per displayed notification, in declaration order.
    public static let perDisplayed = allCases.filter { $0.denominator == .displayed }

    /// The report's rates in the order it shows them: dismiss before reply, as it always has,
    /// then any later per-displayed metric in declaration order.
    public static let reported: [EngagementMetric] = {
        let first: [EngagementMetric] = [.expansion, .action, .open, .dismiss]
        return first + perDisplayed.filter { !first.contains($0) }
    }()

    private static let ordered = allCases
}

/// One number per metric, in lane `EngagementMetric.lane`; the lanes past the last metric stay 0.
/// A vector rather than a dictionary because per-device tallies update every metric at once.
public typealias MetricLanes = SIMD8<Int>

extension SIMD8 {
    /// The lane of `metric`.
    public subscript(metric: EngagementMetric) -> Scalar {
        get { self[metric.lane] }
        set { self[metric.lane] = newValue }
    }
}
