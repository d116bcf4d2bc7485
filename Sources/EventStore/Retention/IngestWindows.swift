import EngageCore
import Postgres

/// The occurred_at windows the running engage serve processes accept, in `ingest_windows`: each
/// writes its own at start and every hour (`IngestWindowRecorder`), and a prune keeps the
/// idempotency window of the largest seen lately, whatever its own options say.
public enum IngestWindows {
    /// How long a window counts after it was last written: a process writes it every hour, so
    /// one not seen for this long has stopped (or been reconfigured).
    public static let seenWithin: Duration = .seconds(2 * 86_400)

    /// Writes (or refreshes) `limits`' window.
    public static func record(_ limits: EventLimits, on connection: Connection) throws {
        try connection.execute("""
            INSERT INTO ingest_windows (max_past_seconds, max_future_seconds)
            VALUES (\(limits.maxPast.components.seconds), \(limits.maxFuture.components.seconds))
            ON CONFLICT (max_past_seconds, max_future_seconds) DO UPDATE SET seen_at = now()
            """)
    }

    /// `limits` widened to the largest window written within `seenWithin` of the database's now.
    public static func widening(_ limits: EventLimits, on connection: Connection) throws -> EventLimits {
        let row = try connection.query("""
            SELECT max(max_past_seconds), max(max_future_seconds) FROM ingest_windows
            WHERE seen_at > now() - make_interval(secs => \(Double(seenWithin.components.seconds)))
            """)[0]
        var widened = limits
        if let past = try row.decode(0, as: Int64?.self) { widened.maxPast = max(limits.maxPast, .seconds(past)) }
        if let future = try row.decode(1, as: Int64?.self) { widened.maxFuture = max(limits.maxFuture, .seconds(future)) }
        return widened
    }
}
