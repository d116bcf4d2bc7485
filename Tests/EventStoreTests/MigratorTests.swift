import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

@Suite("Migrations")
struct MigratorTests {
    @Test func migrationsApplyInOrderOnceAndRecordChecksums() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let migrator = Migrator(migrations: [
            Migration(version: 2, name: "second", script: "CREATE TABLE b (x int REFERENCES a (x));"),
            Migration(version: 1, name: "first", script: "CREATE TABLE a (x int PRIMARY KEY);"),
        ].sorted { $0.version < $1.version })
        let first = try migrator.migrate(connection)
        #expect(first.applied == ["001_first.sql", "002_second.sql"])
        let again = try migrator.migrate(connection)
        #expect(again.applied.isEmpty)
        #expect(again.alreadyApplied == 2)
        let rows = try connection.query("SELECT version, checksum FROM schema_migrations ORDER BY version")
        #expect(try rows[0].decode(1, as: String.self) == migrator.migrations[0].checksum)
        #expect(try migrator.pendingProblem(connection) == nil)
    }

    @Test func editedAppliedMigrationIsRefused() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        try Migrator(migrations: [Migration(version: 1, name: "first", script: "CREATE TABLE a (x int);")]).migrate(connection)
        let edited = Migrator(migrations: [
            Migration(version: 1, name: "first", script: "CREATE TABLE a (x bigint);"),
            Migration(version: 2, name: "second", script: "CREATE TABLE c (y int);"),
        ])
        let error = #expect(throws: MigrationError.self) { try edited.migrate(connection) }
        guard case .changedAfterApplied(let file, _, _) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(file == "001_first.sql")
        #expect(error?.description.contains("was edited after it was applied") == true)
        // Nothing of the later migration was applied.
        #expect(try connection.query("SELECT to_regclass('c') IS NULL")[0].decode(0, as: Bool.self))
        #expect(try edited.pendingProblem(connection)?.contains("edited") == true)
    }

    @Test func failingMigrationRollsBackCompletely() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let migrator = Migrator(migrations: [
            Migration(version: 1, name: "ok", script: "CREATE TABLE a (x int);"),
            Migration(version: 2, name: "broken", script: "CREATE TABLE half (x int); SELECT * FROM nowhere;"),
        ])
        let error = #expect(throws: MigrationError.self) { try migrator.migrate(connection) }
        #expect(error?.description.hasPrefix("migration 002_broken.sql failed and was rolled back") == true)
        #expect(try connection.query("SELECT to_regclass('half') IS NULL")[0].decode(0, as: Bool.self))
        #expect(try connection.query("SELECT count(*) FROM schema_migrations")[0].decode(0, as: Int.self) == 1)
    }

    /// A migration that dropped a view for the views to recreate, then a later one that failed:
    /// the view is back (as the schema now stands allows), not missing until a run gets through.
    @Test func aFailedRunStillRecreatesTheViewsAnEarlierMigrationDropped() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let view = (name: "010_view.sql", script: "CREATE OR REPLACE VIEW totals AS SELECT sum(bytes) AS bytes FROM sums;")
        try Migrator(migrations: [Migration(version: 1, name: "table", script: "CREATE TABLE sums (bytes bigint);")],
                     viewScripts: [view]).migrate(connection)
        let upgrade = Migrator(migrations: [
            Migration(version: 1, name: "table", script: "CREATE TABLE sums (bytes bigint);"),
            Migration(version: 2, name: "exact", script: "DROP VIEW totals; ALTER TABLE sums ALTER COLUMN bytes TYPE numeric;"),
            Migration(version: 3, name: "broken", script: "SELECT * FROM nowhere;"),
        ], viewScripts: [view])
        let error = #expect(throws: MigrationError.self) { try upgrade.migrate(connection) }
        #expect(error?.description.hasPrefix("migration 003_broken.sql failed") == true)
        #expect(try connection.query("SELECT to_regclass('totals') IS NOT NULL")[0].decode(0, as: Bool.self))
        #expect(try connection.query("SELECT count(*) FROM schema_migrations")[0].decode(0, as: Int.self) == 2)
    }

    @Test func repositoryMigrationsApplyToAnEmptyDatabaseAndAreCurrent() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let migrator = try Migrator.fromSQLDirectory()
        #expect(!migrator.migrations.isEmpty)
        let report = try migrator.migrate(connection)
        #expect(report.applied.count == migrator.migrations.count)
        #expect(try migrator.pendingProblem(connection) == nil)
        // The log is partitioned by day; the idempotency key is event_ids' primary key.
        let key = try connection.query("""
            SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'event_ids'::regclass AND contype = 'p'
            """)
        #expect(try key.rows.map { try $0.decode(0, as: String.self) } == ["PRIMARY KEY (event_id)"])
        #expect(try connection.query("SELECT pg_get_partkeydef('events'::regclass)")[0].decode(0, as: String.self) == "RANGE (recorded_at)")
        // A fresh database has no legacy partition: weeks from Monday, this one and the next
        // (which holds the day a week from now).
        let partitions = try EventPartitions.list(on: connection)
        #expect(partitions.count == 2)
        #expect(partitions.allSatisfy { $0.name.hasPrefix("events_20") && $0.lower != nil })
        let weekMicroseconds: Int64 = 7 * 86_400_000_000
        #expect(partitions.allSatisfy { $0.upper.microsecondsSinceEpoch - $0.lower!.microsecondsSinceEpoch == weekMicroseconds })
        let monday = try connection.query("SELECT (extract(epoch FROM date_trunc('week', now() AT TIME ZONE 'UTC')) * 1000000)::int8")[0]
            .decode(0, as: Int64.self)
        #expect(partitions.first?.lower?.microsecondsSinceEpoch == monday)
    }

    /// 006 moves what 004 kept beside the log (lifecycle history, decisions) into the log.
    @Test func experimentHistoryAndDecisionsMoveIntoTheLog() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let all = try Migrator.fromSQLDirectory()
        try Migrator(migrations: all.migrations.filter { $0.version <= 4 }).migrate(connection)
        try connection.execute("""
            INSERT INTO experiments (id, app_id, definition, status) VALUES ('exp-1', 'app-1', '{"id": "exp-1"}', 'running')
            """)
        try connection.execute("""
            INSERT INTO experiment_history (experiment_id, action, at, definition) VALUES
                ('exp-1', 'created', '2026-03-01T00:00:00Z', '{"status": "draft"}'),
                ('exp-1', 'started', '2026-03-01T01:00:00Z', '{"status": "running"}')
            """)
        try connection.execute("""
            INSERT INTO experiment_runs (experiment_id, scheduled_for, status, decision, result, finished_at) VALUES
                ('exp-1', '2026-03-01T02:00:00Z', 'done', 'continue', '{"look": 1}', '2026-03-01T02:00:05Z'),
                ('exp-1', '2026-03-01T03:00:00Z', 'failed', NULL, NULL, '2026-03-01T03:00:05Z')
            """)
        try all.migrate(connection)
        let rows = try connection.query("""
            SELECT type, payload->>'action', payload->'definition'->>'status', payload->>'decision', payload->'result'->>'look'
            FROM events
            WHERE app_id = 'app-1' AND notification_id = 'experiment:exp-1' AND device_id = '' AND experiment_id IS NULL
            ORDER BY transaction_id, position
            """).rows
        #expect(try rows.map { try $0.decode(0, as: String.self) } == ["experiment_created", "experiment_started", "experiment_analysed"])
        #expect(try rows.map { try $0.decode(2, as: String?.self) } == ["draft", "running", nil])
        #expect(try rows[2].decode(3, as: String.self) == "continue")
        #expect(try rows[2].decode(4, as: String.self) == "1")
        #expect(try connection.query("SELECT to_regclass('experiment_history') IS NULL")[0].decode(0, as: Bool.self))
    }

    /// 008 folds the month partitions and `event_ids` into one table keyed by event id, keeping
    /// every row's place in the log.
    @Test func theLogBecomesOneTableKeyedByEventID() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let all = try Migrator.fromSQLDirectory()
        try Migrator(migrations: all.migrations.filter { $0.version <= 7 }, viewScripts: all.viewScripts).migrate(connection)
        let upTo9 = Migrator(migrations: all.migrations.filter { $0.version <= 9 }, viewScripts: all.viewScripts)
        try connection.execute("""
            WITH ids AS (INSERT INTO event_ids (event_id)
                         SELECT ('00000000-0000-4000-8000-' || lpad(i::text, 12, '0'))::uuid FROM generate_series(1, 5) i
                         RETURNING event_id)
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
            SELECT event_id, 'app-1', 'apns-' || event_id, 'expanded', 'new_photo', 'device-1', now(), '{}'
            FROM ids ORDER BY event_id
            """)
        let logOrder = "SELECT event_id::text, transaction_id::text, position FROM events ORDER BY transaction_id, position"
        func rows() throws -> [String] {
            try connection.query(SQL(unsafeSQL: logOrder)).rows.map {
                "\(try $0.decode(0, as: String.self)) \(try $0.decode(1, as: String.self)) \(try $0.decode(2, as: Int.self))"
            }
        }
        let before = try rows()
        #expect(before.count == 5)
        try upTo9.migrate(connection)
        #expect(try rows() == before)
        #expect(try connection.query("SELECT to_regclass('event_ids') IS NULL")[0].decode(0, as: Bool.self))
        #expect(try connection.query("SELECT to_regclass('engagement_rates_daily') IS NOT NULL")[0].decode(0, as: Bool.self))
        #expect(try connection.query("SELECT to_regclass('events_recorded_at') IS NOT NULL")[0].decode(0, as: Bool.self))
        let repeated = #expect(throws: PostgresError.self) {
            try connection.execute("""
                INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
                VALUES ('00000000-0000-4000-8000-000000000003', 'app-1', 'apns-x', 'expanded', 'c', 'd', now(), '{}')
                """)
        }
        #expect(repeated?.isUniqueViolation == true)
        // New rows follow the old ones in the log.
        try connection.execute("""
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
            VALUES ('00000000-0000-4000-8000-000000000006', 'app-1', 'apns-y', 'expanded', 'c', 'd', now(), '{}')
            """)
        #expect(try rows().last?.hasPrefix("00000000-0000-4000-8000-000000000006") == true)
    }

    /// 008 stops, changing nothing, when the old table carries an operator's own index.
    @Test func anOperatorsOwnIndexStopsTheMove() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let all = try Migrator.fromSQLDirectory()
        try Migrator(migrations: all.migrations.filter { $0.version <= 7 }).migrate(connection)
        try connection.execute("CREATE INDEX my_device_index ON events (device_id)")
        let error = #expect(throws: MigrationError.self) { try all.migrate(connection) }
        #expect(error?.description.contains("index my_device_index") == true)
        #expect(try connection.query("SELECT to_regclass('event_ids') IS NOT NULL")[0].decode(0, as: Bool.self))
        #expect(try connection.query("SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass")[0]
            .decode(0, as: Int.self) > 0)
    }

    /// 007 takes the key hashes back from a dashboard reader granted SELECT on every table.
    @Test func aReaderRoleLosesTheKeyTable() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let all = try Migrator.fromSQLDirectory()
        try Migrator(migrations: all.migrations.filter { $0.version <= 6 }).migrate(connection)
        let reader = "engage_test_reader_\(UInt32.random(in: 0...UInt32.max))"
        try connection.execute(SQL(unsafeSQL: "CREATE ROLE \(reader)"))
        try connection.execute(SQL(unsafeSQL: "GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(reader)"))
        func canRead(_ table: String) throws -> Bool {
            try connection.query("SELECT has_table_privilege(\(reader), \(table), 'SELECT')")[0].decode(0, as: Bool.self)
        }
        #expect(try canRead("api_keys"))
        try connection.execute(SQL(unsafeSQL: "GRANT INSERT ON events TO \(reader) WITH GRANT OPTION"))
        try all.migrate(connection)
        #expect(try !canRead("api_keys"))
        // 008 rebuilt events: the grants on the old table carried over, grant option included.
        #expect(try canRead("events"))
        #expect(try connection.query("SELECT has_table_privilege(\(reader), 'events', 'INSERT WITH GRANT OPTION')")[0]
            .decode(0, as: Bool.self))
        #expect(try canRead("experiment_runs"))
        try connection.execute(SQL(unsafeSQL: "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM \(reader)"))
        try connection.execute(SQL(unsafeSQL: "DROP ROLE \(reader)"))
    }
}
