import EventStore
import Postgres
import Testing
import TestSupport

/// An incremental look finds the notifications of its experiment with events since the previous
/// look through an index of the tagged events by transaction (migration 025), not through every
/// app's events since then.
@Suite("The experiment's events by transaction")
struct ExperimentEventsIndexTests {
    /// The partitions that have the index, attached to the log's.
    static func indexedPartitions(_ connection: Connection) throws -> Set<String> {
        Set(try connection.query("""
            SELECT t.relname::text FROM pg_inherits i
            JOIN pg_index x ON x.indexrelid = i.inhrelid
            JOIN pg_class t ON t.oid = x.indrelid
            WHERE i.inhparent = 'events_experiment_by_transaction'::regclass
            """).rows.map { try $0.decode(0, as: String.self) })
    }

    static func partitions(_ connection: Connection) throws -> Set<String> {
        Set(try connection.query("SELECT name FROM event_partitions").rows.map { try $0.decode(0, as: String.self) })
    }

    @Test func everyPartitionHasItAndALookFindsItsNewEventsThroughIt() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        // The migration's partitions (empty), and one attached after it.
        #expect(try Self.indexedPartitions(connection) == Self.partitions(connection))
        #expect(try connection.query("SELECT engage_ensure_event_partition((now() + interval '70 days')::date)")[0].decode(0, as: Bool.self))
        #expect(try Self.indexedPartitions(connection) == Self.partitions(connection))
        #expect(try Self.partitions(connection).count >= 2)
        #expect(try connection.query("""
            SELECT indisvalid FROM pg_index WHERE indexrelid = 'events_experiment_by_transaction'::regclass
            """)[0].decode(0, as: Bool.self))

        // The look's question (`ExperimentTallyStore`) is one the index answers by its columns.
        let plan = try connection.transaction { connection in
            try connection.execute("SET LOCAL enable_seqscan = off")
            return try connection.query("""
                EXPLAIN SELECT notification_id FROM events
                WHERE transaction_id >= '100'::xid8 AND transaction_id < '200'::xid8
                  AND app_id = 'app' AND experiment_id = 'experiment'
                """).rows.map { try $0.decode(0, as: String.self) }.joined(separator: "\n")
        }
        #expect(plan.contains("experiment_by_transaction") || plan.contains("app_id_experiment_id_transaction_id_idx"), "\(plan)")
        #expect(!plan.contains("transaction_id_position_idx") && !plan.contains("notification_id_idx"), "\(plan)")
    }
}
