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

    @Test func repositoryMigrationsApplyToAnEmptyDatabaseAndAreCurrent() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase(migrated: false))
        let migrator = try Migrator.fromSQLDirectory()
        #expect(!migrator.migrations.isEmpty)
        let report = try migrator.migrate(connection)
        #expect(report.applied.count == migrator.migrations.count)
        #expect(try migrator.pendingProblem(connection) == nil)
        // Partitions exist for this month and the next ones.
        let partitions = try connection.query("""
            SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass
            """)[0].decode(0, as: Int.self)
        #expect(partitions >= 5)
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
            FROM events e JOIN event_ids i USING (event_id)
            WHERE app_id = 'app-1' AND notification_id = 'experiment:exp-1' AND device_id = '' AND experiment_id IS NULL
            ORDER BY transaction_id, position
            """).rows
        #expect(try rows.map { try $0.decode(0, as: String.self) } == ["experiment_created", "experiment_started", "experiment_analysed"])
        #expect(try rows.map { try $0.decode(2, as: String?.self) } == ["draft", "running", nil])
        #expect(try rows[2].decode(3, as: String.self) == "continue")
        #expect(try rows[2].decode(4, as: String.self) == "1")
        #expect(try connection.query("SELECT to_regclass('experiment_history') IS NULL")[0].decode(0, as: Bool.self))
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
        try all.migrate(connection)
        #expect(try !canRead("api_keys"))
        #expect(try canRead("events"))
        #expect(try canRead("experiment_runs"))
        try connection.execute(SQL(unsafeSQL: "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM \(reader)"))
        try connection.execute(SQL(unsafeSQL: "DROP ROLE \(reader)"))
    }
}
