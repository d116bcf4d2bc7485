import EngageCore
import EventStore
import Foundation
import Postgres
import Synchronization
import Testing
import TestSupport

/// A migration that alters a table the appends use (018 adds `event_ids.app_id`) needs an ACCESS
/// EXCLUSIVE lock. Waiting for it behind a long transaction (a `pg_dump`, a prune or a restore in
/// progress), it would hold up every append queued behind it for as long: ingestion stops. The
/// migrator waits a moment at a time instead, and lets the appends through in between.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct MigrationLockTests {
    @Test func aMigrationWaitingForItsLockDoesNotHoldUpAppends() async throws {
        let database = try TestPostgres.freshDatabase(migrated: false)
        // Up to 018: the migration this test is about (later ones are not its subject).
        let all = try Migrator.fromSQLDirectory()
        let full = Migrator(migrations: all.migrations.filter { $0.version <= 18 }, viewScripts: all.viewScripts)
        let setup = try Connection(configuration: database)
        defer { setup.close() }
        try Migrator(migrations: full.migrations.filter { $0.version < 18 }).migrate(setup)

        // A long reader of event_ids, as a dump is.
        let reader = try Connection(configuration: database)
        defer { reader.close() }
        try reader.execute("BEGIN")
        try reader.execute("LOCK TABLE event_ids IN ACCESS SHARE MODE")

        let finished = Mutex<Result<Migrator.Report, any Error>?>(nil)
        let migrating = Thread {
            let result = Result { () throws -> Migrator.Report in
                let connection = try Connection(configuration: database)
                defer { connection.close() }
                return try full.migrate(connection)
            }
            finished.withLock { $0 = result }
        }
        migrating.start()
        // The migration is in the lock queue of event_ids.
        try await pollUntil {
            try setup.query("""
                SELECT count(*) FROM pg_locks WHERE relation = 'event_ids'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted
                """)[0].decode(0, as: Int.self) == 1
        }

        // An append as the running engage, older than 018, makes it (and as the experiment log does).
        let appender = try Connection(configuration: database)
        defer { appender.close() }
        try appender.execute("SET statement_timeout = '5s'")
        do {
            #expect(try appender.execute("INSERT INTO event_ids (event_id) VALUES (gen_random_uuid())") == 1)
        } catch {
            Issue.record("an append waited behind the migration: \(String(reflecting: error))")
        }

        try reader.execute("COMMIT")
        try await pollUntil(every: .milliseconds(20)) { finished.withLock { $0 != nil } }
        let report = try #require(finished.withLock { $0 }).get()
        #expect(report.applied == ["018_event_ids_app.sql"])
        // And the new engage appends once it is applied.
        #expect(try EventStore.append([AppendItem(appID: "app-1", event: EventFactory.event())], on: appender).storedCount == 1)
    }
}
