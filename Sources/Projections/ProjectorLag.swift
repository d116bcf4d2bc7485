import EngageCore
import EventStore
import Postgres
import Runtime

/// How far the engagement read model is behind the log, as the database sees it now.
///
/// - `events`: events in the log after the projector's checkpoint (committed, in any order the
///   projector will read them), i.e. appended but not yet folded.
/// - `seconds`: how long the oldest of those events has been in the log (now minus its
///   `recorded_at`, the start of the transaction that appended it); 0 when `events` is 0. It
///   stays 0 while nothing is appended, however old the checkpoint, and grows second by second
///   while the projector is stopped with events waiting.
///
/// Counting walks the log's index over the unfolded part only: cheap while the projector keeps
/// up, proportional to the backlog when it does not.
public struct ProjectorLag: Sendable, Equatable {
    public var checkpoint: LogPosition
    /// When the checkpoint last moved (the committing transaction's start); nil before the first batch.
    public var checkpointAt: Timestamp?
    /// Events the projector has folded so far (the checkpoint row's count; 0 before the first batch).
    public var eventsProcessed: Int
    public var events: Int
    public var seconds: Double

    public static func read(_ projection: String = EngagementStore.projectionName, on connection: Connection) throws -> ProjectorLag {
        let checkpoints = try connection.query("""
            SELECT transaction_id, position, updated_at, events_processed FROM projection_checkpoints
            WHERE projection = \(projection)
            """)
        var checkpoint = LogPosition.start
        var checkpointAt: Timestamp?
        var eventsProcessed = 0
        if let row = checkpoints.rows.first {
            checkpoint = LogPosition(transactionID: try row.decode(0), sequence: try row.decode(1))
            checkpointAt = Timestamp(microsecondsSinceEpoch: try row.cell(2).unixMicroseconds())
            eventsProcessed = try row.decode(3)
        }
        let behind = try connection.query(backlog(after: checkpoint))[0]
        return ProjectorLag(checkpoint: checkpoint, checkpointAt: checkpointAt, eventsProcessed: eventsProcessed,
                            events: try behind.decode(0),
                            seconds: try behind.decode(1))
    }

    /// The count and oldest `recorded_at` of the events after `checkpoint`.
    ///
    /// The planner cannot estimate the row comparison on its own: without statistics for the
    /// partition (a new week's partition, or any before autovacuum first analyzes it: about a
    /// minute and a half into sustained ingestion into an emptied log) it takes a third of the
    /// table, and plans a parallel scan of the whole partition with JIT compilation, for a
    /// backlog that is a few seconds of events. Scraped every 0.5 s by `Benchmarks/lag.sh`, that
    /// scan (0.7 s on 3 processes for a partition of 7,800,000 events) took the cores the lag
    /// measures. `transaction_id` bounded on both sides (from the checkpoint's transaction to the
    /// snapshot's `xmax`, above every committed transaction, so no event is left out) is a range
    /// the planner estimates narrowly even without statistics, and with them from the histogram
    /// and the index's actual end: the backlog is read from the `(transaction_id, position)`
    /// index, in time proportional to the backlog.
    static func backlog(after checkpoint: LogPosition) -> SQL {
        let transaction = String(checkpoint.transactionID)
        return """
            SELECT count(*)::int8, coalesce(greatest(extract(epoch FROM clock_timestamp() - min(recorded_at)), 0), 0)::float8
            FROM events
            WHERE transaction_id >= \(transaction)::xid8
              AND transaction_id < pg_snapshot_xmax(pg_current_snapshot())
              AND (transaction_id, position) > (\(transaction)::xid8, \(checkpoint.sequence))
            """
    }

    /// The report's "current as of".
    public var freshness: ReportFreshness {
        ReportFreshness(checkpointAt: checkpointAt, lagEvents: events, lagSeconds: seconds)
    }
}

/// `engage_projector_lag_events` and `engage_projector_lag_seconds`, read from the database when
/// `/metrics` is scraped, so any engage process shows them whether or not its projector is the
/// active one (or runs at all).
public struct ProjectorLagGauges: Sendable {
    let events: Gauge
    let seconds: Gauge

    public init(registry: MetricsRegistry) {
        events = registry.gauge("engage_projector_lag_events",
                                help: "Events in the log after the engagement projector's checkpoint (not yet folded); NaN when the database did not answer.")
        seconds = registry.gauge("engage_projector_lag_seconds",
                                 help: "Age of the oldest event not yet folded by the engagement projector, 0 when none; NaN when the database did not answer.")
    }

    /// Reads the lag now; on failure the gauges show NaN rather than a stale value.
    public func refresh(from pool: ConnectionPool) async {
        do {
            let lag = try await pool.withConnection { try ProjectorLag.read(on: $0) }
            events.set(Double(lag.events))
            seconds.set(lag.seconds)
        } catch {
            events.set(.nan)
            seconds.set(.nan)
        }
    }
}
