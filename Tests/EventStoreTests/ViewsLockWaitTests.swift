import EventStore
import Foundation
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

/// The views step of the migrator replaces views while other sessions may hold a table the views
/// read (a long transaction holding engagement_daily, as an ALTER or a table swap does). Like a
/// migration it waits a bounded time per attempt, says in the log what it waits for, finishes
/// once the lock is released, and gives up with a clear error when it never is.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ViewsLockWaitTests {
    /// A session of a migrated database holding engagement_daily, which the views read.
    static func holder(_ database: PostgresConfiguration) throws -> OpenTransaction {
        try OpenTransaction(database, holding: "LOCK TABLE engagement_daily IN ACCESS EXCLUSIVE MODE")
    }

    /// The migrator's outcome, once its thread has one.
    final class Outcome: Sendable {
        let result = Mutex<Result<Migrator.Report, any Error>?>(nil)
        func withLock<T>(_ body: (inout Result<Migrator.Report, any Error>?) -> T) -> T { result.withLock { body(&$0) } }
    }

    /// Runs `migrator` on its own thread, as `engage migrate` does on its own.
    static func start(_ migrator: Migrator, _ database: PostgresConfiguration, logger: Logger) -> Outcome {
        let finished = Outcome()
        Thread {
            let result = Result { () throws -> Migrator.Report in
                let connection = try Connection(configuration: database)
                defer { connection.close() }
                return try migrator.migrate(connection, logger: logger)
            }
            finished.withLock { $0 = result }
        }.start()
        return finished
    }

    @Test func theViewsStepReportsItsWaitAndFinishesOnceTheLockIsReleased() async throws {
        let database = try TestPostgres.freshDatabase()
        let holder = try Self.holder(database)
        defer { holder.connection.close() }
        let sink = MemoryLogSink()
        var migrator = try Migrator.fromSQLDirectory()
        migrator.lockTimeout = .milliseconds(100)
        migrator.lockRetryPause = .milliseconds(20)
        let finished = Self.start(migrator, database, logger: Logger(label: "test", sink: sink))

        try await pollUntil(every: .milliseconds(20)) {
            sink.lines.contains { $0.contains("msg=migration.lock_wait ") && $0.contains("file=views/010_engagement.sql") }
        }
        let wait = try #require(sink.lines.first { $0.contains("msg=migration.lock_wait ") })
        let fields = wait.split(separator: " ")
        #expect(fields.contains("lock.attempt=1") && fields.contains("lock.timeout_ms=100"))
        #expect(wait.contains("pid \(holder.pid) (idle in transaction, transaction "))
        #expect(wait.contains("AccessExclusiveLock on engagement_daily"))
        #expect(finished.withLock { $0 == nil }, "still waiting while the lock is held")

        try holder.commit()
        try await pollUntil(every: .milliseconds(20)) { finished.withLock { $0 != nil } }
        let report = try #require(finished.withLock { $0 }).get()
        #expect(report.applied.isEmpty)
        #expect(!sink.lines.contains { $0.contains("migration.lock_wait_gave_up") })
    }

    @Test func theViewsStepGivesUpWhenTheLockIsNeverReleased() async throws {
        let database = try TestPostgres.freshDatabase()
        let holder = try Self.holder(database)
        defer { holder.connection.close() }
        let sink = MemoryLogSink()
        var migrator = try Migrator.fromSQLDirectory()
        migrator.lockTimeout = .milliseconds(50)
        migrator.lockRetryPause = .milliseconds(10)
        migrator.lockAttempts = 3
        let finished = Self.start(migrator, database, logger: Logger(label: "test", sink: sink))

        try await pollUntil(every: .milliseconds(20)) { finished.withLock { $0 != nil } }
        let result = try #require(finished.withLock { $0 })
        guard case .failure(let error) = result, case .lockWaitGaveUp(let file, let attempts, let milliseconds, let heldBy)? = error as? MigrationError else {
            Issue.record("expected lockWaitGaveUp, got \(result)")
            return
        }
        #expect(file == "views/010_engagement.sql")
        #expect(attempts == 3 && milliseconds == 50)
        #expect(heldBy.hasPrefix("pid \(holder.pid) (idle in transaction, transaction "))
        #expect(heldBy.contains("AccessExclusiveLock on engagement_daily"))
        #expect(String(describing: error).hasPrefix(
            "migration views/010_engagement.sql was rolled back: 3 attempts each waited 50 ms for a lock held by another session and gave up; held by: pid \(holder.pid) "))
        #expect(sink.lines.contains { $0.contains("msg=migration.lock_wait_gave_up") && $0.contains("file=views/010_engagement.sql") })
        // The lock was the only obstacle: released, the same migrator finishes.
        try holder.commit()
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        #expect(try migrator.migrate(connection).applied.isEmpty)
    }
}
