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
}
