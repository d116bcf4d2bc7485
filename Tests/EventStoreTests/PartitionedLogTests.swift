import EngageCore
@testable import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

/// Migration 010 and the partitioned log: a log from before keeps every row and its place,
/// event ids stay unique across days, and appends find their day's partition.
@Suite("Partitioned log")
struct PartitionedLogTests {
    static let logOrder: SQL = """
        SELECT event_id::text, transaction_id::text, position, recorded_at::text FROM events ORDER BY transaction_id, position
        """

    static func rows(_ connection: Connection) throws -> [String] {
        try connection.query(logOrder).rows.map {
            "\(try $0.decode(0, as: String.self)) \(try $0.decode(1, as: String.self)) \(try $0.decode(2, as: Int.self)) \(try $0.decode(3, as: String.self))"
        }
    }

    /// A database at migration 9 holding events recorded 40 days ago and now.
    static func databaseBefore010() throws -> (Connection, Migrator) {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let all = try Migrator.fromSQLDirectory()
        try Migrator(migrations: all.migrations.filter { $0.version <= 9 }, viewScripts: all.viewScripts).migrate(connection)
        try connection.execute("SET TIME ZONE 'UTC'")
        try connection.execute("""
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, recorded_at, payload)
            SELECT ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid, 'app-1', 'apns-' || i, 'expanded', 'new_photo',
                   'device-1', now() - interval '41 days', CASE WHEN i <= 3 THEN now() - interval '40 days' ELSE now() END, '{}'
            FROM generate_series(1, 5) i
            """)
        return (connection, all)
    }

    @Test func aLogFromBeforeBecomesTheLegacyPartitionWithEveryRowInItsPlace() async throws {
        let (connection, all) = try Self.databaseBefore010()
        let reader = "engage_test_reader_\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute(SQL(unsafeSQL: "CREATE ROLE \(reader)"))
        try connection.execute(SQL(unsafeSQL: "GRANT SELECT ON events TO \(reader)"))
        defer {
            _ = try? connection.execute(SQL(unsafeSQL: "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM \(reader)"))
            _ = try? connection.execute(SQL(unsafeSQL: "DROP ROLE \(reader)"))
        }
        let before = try Self.rows(connection)
        #expect(before.count == 5)

        try all.migrate(connection)

        #expect(try Self.rows(connection) == before)
        #expect(try connection.query("SELECT count(*) FROM event_ids")[0].decode(0, as: Int.self) == 5)
        #expect(try connection.query("SELECT count(*) FROM events e JOIN event_ids USING (event_id)")[0].decode(0, as: Int.self) == 5)
        #expect(try connection.query("SELECT has_table_privilege(\(reader), 'events', 'SELECT')")[0].decode(0, as: Bool.self))
        let partitions = try EventPartitions.list(on: connection)
        let legacy = try #require(partitions.first)
        #expect(legacy.name == "events_legacy")
        #expect(legacy.lower == nil)
        let nextMonday = try connection.query("""
            SELECT (extract(epoch FROM date_trunc('week', now() AT TIME ZONE 'UTC') + interval '7 days') * 1000000)::int8
            """)[0].decode(0, as: Int64.self)
        #expect(legacy.upper.microsecondsSinceEpoch == nextMonday)
        // Weeks start where the legacy partition ends: next week's holds the day a week from now.
        #expect(partitions.dropFirst().map(\.lower?.microsecondsSinceEpoch) == [nextMonday])

        // The old rows' ids are still the idempotency key; new events land in the log.
        connection.close()
        let pool = ConnectionPool(configuration: connection.configuration, size: 2)
        defer { Task { await pool.close() } }
        let store = EventStore(pool: pool)
        let old = EventFactory.event(id: try #require(EventID("00000000-0000-4000-8000-000000000002")))
        let fresh = EventFactory.event()
        let result = try await store.append([AppendItem(appID: "app-1", event: old), AppendItem(appID: "app-1", event: fresh)])
        #expect(result.outcomes == [.duplicate, .stored])
        let stored = try await pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM events WHERE event_id = \(fresh.eventID.description)::uuid")[0].decode(0, as: Int.self)
        }
        #expect(stored == 1)
    }

    @Test func anOperatorsViewOnTheLogStopsThePartitioning() throws {
        let (connection, all) = try Self.databaseBefore010()
        try connection.execute("CREATE VIEW my_recent_events AS SELECT * FROM events WHERE recorded_at > now() - interval '1 day'")
        let error = #expect(throws: MigrationError.self) { try all.migrate(connection) }
        #expect(error?.description.contains("view my_recent_events") == true)
        // Rolled back whole: still one table with its primary key.
        #expect(try connection.query("SELECT relkind::text FROM pg_class WHERE relname = 'events'")[0].decode(0, as: String.self) == "r")
        #expect(try connection.query("SELECT to_regclass('event_ids') IS NULL")[0].decode(0, as: Bool.self))
    }

    @Test func aRetryOfAnEventRecordedInAnEarlierWeekIsADuplicate() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 4)
        defer { Task { await pool.close() } }
        let event = EventFactory.event()
        // Stored eight days ago (always another week's partition), as that day's append would
        // have: its id and its row together.
        try await pool.withConnection { connection in
            try connection.transaction { connection in
                try connection.execute("SELECT engage_ensure_event_partition(((now() - interval '8 days') AT TIME ZONE 'UTC')::date)")
                try connection.execute("INSERT INTO event_ids VALUES (\(event.eventID.description)::uuid)")
                try connection.execute("""
                    INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, recorded_at, payload)
                    VALUES (\(event.eventID.description)::uuid, 'app-1', 'n-1', 'expanded', 'new_photo', 'device-1', now(),
                            now() - interval '8 days', '{}')
                    """)
            }
        }
        let store = EventStore(pool: pool)
        let retry = try await store.append([AppendItem(appID: "app-1", event: event)])
        #expect(retry.outcomes == [.duplicate])
        // Also when the retry comes with a fresh event the careful path has to sort out.
        let fresh = EventFactory.event()
        let mixed = try await store.append([AppendItem(appID: "app-1", event: event),
                                            AppendItem(appID: "app-1", event: fresh),
                                            AppendItem(appID: "app-1", event: event)])
        #expect(mixed.outcomes == [.duplicate, .stored, .duplicate])
        // And when eight appenders race with it, each carrying the fresh one too.
        let raced = try await withThrowingTaskGroup(of: AppendResult.self) { group in
            for _ in 0..<8 {
                group.addTask { try await store.append([AppendItem(appID: "app-1", event: event), AppendItem(appID: "app-1", event: fresh)]) }
            }
            return try await group.reduce(into: [AppendResult]()) { $0.append($1) }
        }
        #expect(raced.allSatisfy { $0.outcomes == [.duplicate, .duplicate] })
        let placement = try await pool.withConnection { connection in
            try connection.query("""
                SELECT event_id::text, tableoid::regclass::text FROM events ORDER BY recorded_at
                """).rows.map { "\(try $0.decode(0, as: String.self)) \(try $0.decode(1, as: String.self))" }
        }
        #expect(placement.count == 2)
        #expect(placement.first?.hasPrefix(event.eventID.description) == true)
        // The retried event and the fresh one live in two partitions, under one key.
        let tables = Set(placement.map { $0.split(separator: " ")[1] })
        #expect(tables.count == 2)
        let keyed = try await pool.withConnection { connection in
            try connection.query("SELECT count(*) FROM events JOIN event_ids USING (event_id)")[0].decode(0, as: Int.self)
        }
        #expect(keyed == 2)
    }

    @Test func anAppendThatFindsNoPartitionForItsDayMakesIt() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        defer { Task { await pool.close() } }
        try await pool.withConnection { connection in
            for partition in try EventPartitions.list(on: connection) {
                try connection.execute("DROP TABLE \(identifier: partition.name)")
            }
        }
        let result = try await EventStore(pool: pool).append(EventFactory.items(3))
        #expect(result.storedCount == 3)
        let partitions = try await pool.withConnection { try EventPartitions.list(on: $0) }
        #expect(partitions.count == 2)
    }

    /// The missing partition is recognised by the error's fields, not its English message: a
    /// server whose `lc_messages` translates it ("keine Partition von Relation »events«...") is
    /// read the same; a CHECK constraint's violation (same SQLSTATE) is not taken for one.
    @Test func aMissingPartitionIsKnownInAnyLanguage() async throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        defer { connection.close() }
        try connection.execute("CREATE TABLE week_log (at date NOT NULL, n int CHECK (n > 0)) PARTITION BY RANGE (at)")
        func failure(_ statement: SQL) throws -> PostgresError {
            do {
                try connection.execute(statement)
            } catch let error as PostgresError {
                return error
            }
            throw PostgresError(kind: .misuse, message: "the statement did not fail")
        }
        var missing = try failure("INSERT INTO week_log VALUES ('2026-12-07', 1)")
        #expect(missing.sqlState == "23514" && missing.isMissingPartition)
        var unnamed = missing
        missing.message = "keine Partition von Relation »week_log« für Zeile gefunden"
        #expect(missing.isMissingPartition)
        // A server that names no table for it is read by its English message alone.
        unnamed.tableName = nil
        #expect(unnamed.isMissingPartition)
        unnamed.message = "keine Partition von Relation »week_log« für Zeile gefunden"
        #expect(!unnamed.isMissingPartition)
        try connection.execute("CREATE TABLE week_log_all PARTITION OF week_log FOR VALUES FROM ('2000-01-01') TO ('2100-01-01')")
        let check = try failure("INSERT INTO week_log VALUES ('2026-12-07', -1)")
        #expect(check.sqlState == "23514" && check.constraintName != nil && !check.isMissingPartition)
    }
}
