import EventStore
import Postgres
@testable import Projections
import Testing
import TestSupport

/// The lag's backlog query on a log partition PostgreSQL has no statistics for, as after the log
/// was emptied or on a new week's partition until autovacuum first analyzes it: the planner must
/// still read the backlog from the `(transaction_id, position)` index, not scan the partition.
@Suite("Projector lag query")
struct ProjectorLagQueryTests {
    static let events = 40_000
    static let behind = 100

    @Test
    func backlogIsReadFromTheLogIndexWithoutStatistics() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        // Autovacuum must not analyze the partitions while the test runs.
        let partitions = try connection.query("SELECT name FROM event_partitions").rows.map { try $0.decode(0, as: String.self) }
        for partition in partitions {
            try connection.execute("ALTER TABLE \(identifier: partition) SET (autovacuum_enabled = off)")
        }
        // Forty appending transactions of a thousand events each.
        for _ in 0..<(Self.events / 1000) {
            try connection.execute("""
                INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
                SELECT gen_random_uuid(), 'app-1', 'n-' || i, 'delivered', 'new_photo', 'device-1', now(), '{}'
                FROM generate_series(1, 1000) AS i
                """)
        }
        let filled = try connection.query("SELECT tableoid::regclass::text FROM events LIMIT 1")[0].decode(0, as: String.self)
        let statistics = try connection.query("SELECT count(*)::int8 FROM pg_stats WHERE tablename = \(filled)")[0].decode(0, as: Int64.self)
        try #require(statistics == 0, "the partition was analyzed; the test needs it without statistics")

        let last = try connection.query("""
            SELECT transaction_id::text, position FROM events ORDER BY transaction_id DESC, position DESC OFFSET \(Self.behind) LIMIT 1
            """)[0]
        let checkpoint = LogPosition(transactionID: try #require(UInt64(try last.decode(0, as: String.self))), sequence: try last.decode(1))
        try EngagementStore.moveCheckpoint(EngagementStore.projectionName, to: checkpoint, events: Self.events - Self.behind, on: connection)

        // The conditions are those where the planner goes wrong: the row comparison alone, as the
        // query was, scans the whole partition.
        let unbounded = try plan(of: """
            SELECT count(*)::int8 FROM events
            WHERE (transaction_id, position) > (\(String(checkpoint.transactionID))::xid8, \(checkpoint.sequence))
            """, on: connection)
        #expect(unbounded.contains("Seq Scan on \(filled)"), "\(unbounded)")

        let backlog = try plan(of: ProjectorLag.backlog(after: checkpoint), on: connection)
        #expect(!backlog.contains("Seq Scan on \(filled)"), "\(backlog)")
        #expect(!backlog.contains("Gather"), "\(backlog)")
        #expect(backlog.contains("\(filled)_transaction_id_position_idx"), "\(backlog)")

        // The age of the first unfolded event in log order, read just before and just after the lag.
        let age: SQL = """
            SELECT extract(epoch FROM clock_timestamp() - recorded_at)::float8 FROM events
            ORDER BY transaction_id, position OFFSET \(Self.events - Self.behind) LIMIT 1
            """
        let before = try connection.query(age)[0].decode(0, as: Double.self)
        let lag = try ProjectorLag.read(on: connection)
        let after = try connection.query(age)[0].decode(0, as: Double.self)
        #expect(lag.checkpoint == checkpoint)
        #expect(lag.events == Self.behind)
        #expect(lag.seconds > 0)
        #expect(lag.seconds >= before && lag.seconds <= after, "\(before) <= \(lag.seconds) <= \(after)")

        // A reading counts up to its limit and no further, so it costs the same however far behind.
        let capped = try ProjectorLag.read(countingUpTo: Self.behind / 2, on: connection)
        #expect(capped.events == Self.behind / 2)
        #expect(capped.seconds >= before)
        #expect(ProjectorLag.countedUpTo == 100_000)
    }

    /// The plan PostgreSQL chooses for `query`, one line per node.
    func plan(of query: SQL, on connection: Connection) throws -> String {
        var explain: SQL = "EXPLAIN "
        explain.append(query)
        return try connection.query(explain).rows.map { try $0.decode(0, as: String.self) }.joined(separator: "\n")
    }
}
