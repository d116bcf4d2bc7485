import EngageCore
import EventStore
import Postgres
import Runtime

/// How far the engagement read model is behind the log, as the database sees it now.
///
/// - `events`: events in the log after the projector's checkpoint (committed, in any order the
///   projector will read them), i.e. appended but not yet folded, counted up to `countedUpTo`.
/// - `seconds`: how long the first of those events in log order has been in the log (now minus
///   its `recorded_at`, the start of the transaction that appended it); 0 when `events` is 0. It
///   stays 0 while nothing is appended, however old the checkpoint, and grows second by second
///   while the projector is stopped with events waiting. The log's order is that of transaction
///   ids, which an appending transaction takes with its first write, right after it starts: the
///   first event in log order is the oldest one but for those milliseconds.
///
/// A reading costs the same however far behind the projector is: counting visits each event's
/// row (the log's newest pages are not all-visible until vacuum), and an uncapped count of the
/// whole backlog, with the oldest `recorded_at` over it, took about 0.4 s at 320,000 events
/// behind on 2 busy cores. Scraped every 0.5 s, that took a good share of a core from the
/// projector exactly while it was behind, and kept it behind (BENCHMARKS.md, "2026-12-03
/// 08:04-09:38 UTC").
public struct ProjectorLag: Sendable, Equatable {
    public var checkpoint: LogPosition
    /// When the checkpoint last moved (the committing transaction's start); nil before the first batch.
    public var checkpointAt: Timestamp?
    /// Events the projector has folded so far (the checkpoint row's count; 0 before the first batch).
    public var eventsProcessed: Int
    public var events: Int
    public var seconds: Double

    /// The reading on a connection of `pool`, or nil when none came within `limit` (a database
    /// that does not answer, or a pool whose every connection is busy). The checkpoint and the
    /// backlog after it are read on one snapshot, as a report reads them: a batch committed
    /// between the two made a caught-up projector look a batch behind.
    public static func read(from pool: ConnectionPool, within limit: Duration) async throws -> ProjectorLag? {
        try await withTimeLimit(limit) { try await pool.withTransaction(isolation: .repeatableRead) { try read(on: $0) } }
    }

    public static func read(_ projection: String = EngagementStore.projectionName, countingUpTo limit: Int = countedUpTo,
                            on connection: Connection) throws -> ProjectorLag {
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
        let behind = try connection.query(backlog(after: checkpoint, countingUpTo: limit))[0]
        return ProjectorLag(checkpoint: checkpoint, checkpointAt: checkpointAt, eventsProcessed: eventsProcessed,
                            events: try behind.decode(0),
                            seconds: try behind.decode(1))
    }

    /// The count (up to `countedUpTo`) and the age of the first of the events after `checkpoint`.
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
    /// index, up to `limit` events for the count and one for the age.
    static func backlog(after checkpoint: LogPosition, countingUpTo limit: Int = countedUpTo) -> SQL {
        let transaction = String(checkpoint.transactionID)
        let unfolded: SQL = """
            FROM events
            WHERE transaction_id >= \(transaction)::xid8
              AND transaction_id < pg_snapshot_xmax(pg_current_snapshot())
              AND (transaction_id, position) > (\(transaction)::xid8, \(checkpoint.sequence))
            """
        return """
            SELECT (SELECT count(*) FROM (SELECT 1 \(fragment: unfolded) LIMIT \(limit)) AS behind)::int8,
                   coalesce((SELECT greatest(extract(epoch FROM clock_timestamp() - recorded_at), 0)
                             \(fragment: unfolded) ORDER BY transaction_id, position LIMIT 1), 0)::float8
            """
    }

    /// How many unfolded events a reading counts at most: five batches of the projector's, so
    /// every backlog of a healthy projector is counted exactly, and a reading far behind costs a
    /// few tens of milliseconds.
    public static let countedUpTo = ReportFreshness.lagEventsCountedUpTo

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
                                help: "Events in the log after the engagement projector's checkpoint (not yet folded), counted up to \(ProjectorLag.countedUpTo); NaN when the database gave no reading in time (it does not answer, or every pooled connection is busy).")
        seconds = registry.gauge("engage_projector_lag_seconds",
                                 help: "Age of the first event in log order not yet folded by the engagement projector, 0 when none; NaN when the database gave no reading in time (it does not answer, or every pooled connection is busy).")
    }

    /// Reads the lag now; on failure, or with no reading within `limit`, the gauges show NaN
    /// rather than a stale value.
    public func refresh(from pool: ConnectionPool, within limit: Duration) async {
        let lag = try? await ProjectorLag.read(from: pool, within: limit)
        events.set(lag.map { Double($0.events) } ?? .nan)
        seconds.set(lag?.seconds ?? .nan)
    }
}
