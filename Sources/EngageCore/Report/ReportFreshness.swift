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
