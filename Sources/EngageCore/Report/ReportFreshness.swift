/// How current the read model behind a report was when the report read it: the projector's
/// checkpoint and what of the log lay beyond it. Every rendering shows it as "current as of".
///
/// The lag is measured by the database when the report is read (Projections' `ProjectorLag`):
/// `lagEvents` counts the events in the log after the checkpoint, up to `lagEventsCountedUpTo`;
/// `lagSeconds` is how long the first of them in log order (the oldest) has been in the log (0
/// when there are none). The report's numbers include every event up to the checkpoint and none
/// after it.
public struct ReportFreshness: Sendable, Hashable {
    /// When the projector last committed a batch with its checkpoint; nil before its first.
    public var checkpointAt: Timestamp?
    /// Events in the log after the checkpoint, not yet in the report.
    public var lagEvents: Int
    /// Seconds the oldest event after the checkpoint has been in the log; 0 when none is.
    public var lagSeconds: Double

    public init(checkpointAt: Timestamp?, lagEvents: Int, lagSeconds: Double) {
        self.checkpointAt = checkpointAt
        self.lagEvents = lagEvents
        self.lagSeconds = lagSeconds
    }

    /// How many events behind a reading counts at most, so that it costs the same however far
    /// behind the projector is (docs/design.md, "Lag").
    public static let lagEventsCountedUpTo = 100_000

    /// A read model whose oldest unfolded event has waited this long is said to be behind beside the
    /// headline too, not only in "current as of": the projector folds within seconds under load
    /// (docs/scaling.md), so a minute means it has stopped or is falling behind.
    public static let headlineWarningSeconds: Double = 60

    /// Said beside the headline when the read model is a minute or more behind; nil otherwise.
    public var headlineWarning: String? {
        guard lagEvents > 0, lagSeconds >= Self.headlineWarningSeconds else { return nil }
        let events = lagEvents >= Self.lagEventsCountedUpTo ? "at least \(lagEvents) events"
            : lagEvents == 1 ? "1 event" : "\(lagEvents) events"
        let waited = Self.duration(lagSeconds)
        return "NOT CURRENT: \(events) of the log \(lagEvents == 1 ? "is" : "are") not in these figures, "
            + "the oldest recorded \(waited) ago: the projector is behind or stopped."
    }

    /// "90 seconds", "90 minutes", "30 hours", "3 days": whole units, each under half the value,
    /// so that the words never make a wait look much shorter than it is.
    static func duration(_ seconds: Double) -> String {
        let whole = seconds.isNaN ? 0 : Int64(min(max(seconds, 0), 1e12))
        let (count, unit): (Int64, String) = whole < 120 ? (whole, "second")
            : whole < 7_200 ? (whole / 60, "minute")
            : whole < 172_800 ? (whole / 3_600, "hour") : (whole / 86_400, "day")
        return "\(count) \(unit)\(count == 1 ? "" : "s")"
    }

    /// One line for the table and the page: "2026-11-29T19:59:58Z (up to date)",
    /// "2026-11-29T19:59:58Z (1204 events behind, oldest 3.2 s)", or "at least 100000 events".
    public var summary: String {
        let checkpoint = checkpointAt?.rfc3339 ?? "never (no events folded yet)"
        guard lagEvents > 0 else { return checkpoint + " (up to date)" }
        let events = lagEvents == 1 ? "1 event"
            : lagEvents >= Self.lagEventsCountedUpTo ? "at least \(lagEvents) events" : "\(lagEvents) events"
        return checkpoint + " (\(events) behind, oldest \(ReportFormat.fixed(lagSeconds, 1)) s)"
    }
}
