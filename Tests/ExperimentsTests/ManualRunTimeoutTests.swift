import EngageCore
import Experiments
import Foundation
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

/// A manual run (`Scheduler.runNow`) is answered within the scheduler's `databaseAnswerLimit` per
/// database call, whatever the database does. On a primary waiting at the COMMIT for a synchronous
/// standby that is gone (named in `synchronous_standby_names`, not streaming), the insert of the
/// run is made there but never answered: `ManualRunUnanswered` without a run id (it may be
/// queued), and once the primary stops waiting the run is there, pending, for a scheduler to
/// claim. A pair of this suite's own (`StreamingReplication`), since every commit on it stops
/// while it waits for `nobody`.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ManualRunTimeoutTests {
    static let pair = Result { try StreamingReplication(label: "runbound") }
    /// Far beyond the limit: a run not answered by then is taken to wait for ever.
    static let patience = Duration.seconds(30)

    @Test func aManualRunWhoseInsertWaitsForALostStandbyIsAnsweredWithinTheLimit() async throws {
        let replication = try await offPool { try Self.pair.get() }
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let pool = ConnectionPool(configuration: database, size: 2)
        let definition = try Fixtures.definition(id: "bound-run")
        _ = try await ExperimentStore(pool: pool).create(definition)
        var configuration = Scheduler.Configuration()
        configuration.databaseAnswerLimit = .seconds(2)
        let scheduler = Scheduler(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        try await offPool { try replication.synchronousStandby("nobody") }
        defer { try? replication.synchronousStandby(nil) }

        let started = ContinuousClock.now
        let answer = try await ExperimentChangeTimeoutTests.answer(within: Self.patience) {
            try await scheduler.runNow(experimentID: definition.id)
        }
        let waited = ContinuousClock.now - started
        try await offPool { try replication.synchronousStandby(nil) }
        let answered = try #require(answer, "the manual run was not answered within \(Self.patience)")
        guard case .failure(let error) = answered else {
            Issue.record("a run whose insert the standby never confirmed was analysed")
            return
        }
        #expect(error as? ManualRunUnanswered == ManualRunUnanswered(
            experimentID: definition.id, runID: nil, cause: "the database did not answer within 2.0 seconds"), "\(error)")
        #expect(waited < .seconds(12), "answered after \(waited)")
        // Queued: once the primary stops waiting for a standby, the run is there, pending.
        let admin = ConnectionPool(configuration: database, size: 1)
        try await pollUntil(every: .milliseconds(20)) { try await !ExperimentStore(pool: admin).runs(definition.id).isEmpty }
        let runs = try await ExperimentStore(pool: admin).runs(definition.id)
        #expect(runs.count == 1 && runs[0].isManual && runs[0].status == .pending, "\(runs)")
        await pool.close()
        await admin.close()
    }

    /// Inserted and claimed, but storing its result waits (here: for the run's row, which another
    /// session holds): the run is queued, and the answer names it, within the limit.
    @Test func aManualRunWhoseResultCannotBeStoredNamesItsQueuedRun() async throws {
        let (error, runID, runs) = try await Self.runWithItsRowHeld(id: "bound-finish", shortLockTimeout: false)
        #expect(error as? ManualRunUnanswered == ManualRunUnanswered(
            experimentID: "bound-finish", runID: runID, cause: "the database did not answer within 2.0 seconds"), "\(error)")
        // Queued, under this scheduler's lease: another claims it once the lease runs out.
        #expect(runs.map(\.id) == [runID] && runs[0].status == .running, "\(runs)")
    }

    /// The same run refused by the server once it is queued (a `lock_timeout` shorter than the
    /// limit: 55P03 when storing its result) is queued all the same: the answer names the run,
    /// never "nothing stored", which is what any other error would be answered with.
    @Test func aManualRunRefusedOnceQueuedNamesItsQueuedRun() async throws {
        let (error, runID, runs) = try await Self.runWithItsRowHeld(id: "bound-refused", shortLockTimeout: true)
        let unanswered = try #require(error as? ManualRunUnanswered, "\(error)")
        #expect(unanswered.experimentID == "bound-refused" && unanswered.runID == runID, "\(unanswered)")
        #expect(unanswered.cause.contains("55P03"), "\(unanswered)")
        #expect(runs.map(\.id) == [runID], "\(runs)")
    }

    /// Runs experiment `id` by hand while the test holds its run's row as it stores its result
    /// (every connection of the run with a `lock_timeout` of 300 ms with `shortLockTimeout`); the
    /// run's error, its id and the experiment's runs after.
    private static func runWithItsRowHeld(id: String, shortLockTimeout: Bool) async throws
        -> (error: any Error, runID: Int64, runs: [ExperimentRun]) {
        let database = try await offPool { () throws -> PostgresConfiguration in
            let database = try TestPostgres.freshDatabase()
            if shortLockTimeout {
                let connection = try Connection(configuration: database)
                defer { connection.close() }
                let name = try connection.query("SELECT current_database()")[0].decode(0, as: String.self)
                try connection.execute("ALTER DATABASE \(identifier: name) SET lock_timeout = '300ms'")
            }
            return database
        }
        let pool = ConnectionPool(configuration: database, size: 2)
        let definition = try Fixtures.definition(id: id)
        _ = try await ExperimentStore(pool: pool).create(definition)
        // The run waits before storing its result until the test holds the row.
        let (release, released) = AsyncStream.makeStream(of: Never.self)
        let waiting = Mutex(false)
        var configuration = Scheduler.Configuration()
        configuration.databaseAnswerLimit = .seconds(2)
        configuration.failpoint = { name in
            guard name == "scheduler.before-finish" else { return }
            waiting.withLock { $0 = true }
            for await _ in release {}
        }
        let scheduler = Scheduler(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        async let answer = ExperimentChangeTimeoutTests.answer(within: Self.patience) {
            try await scheduler.runNow(experimentID: definition.id)
        }
        try await pollUntil { waiting.withLock { $0 } }
        // Statements that return at once (the row is free until it is taken here).
        let blocker = try Connection(configuration: database)
        defer { blocker.close() }
        try blocker.execute("BEGIN")
        let runID = try blocker.query("SELECT id FROM experiment_runs WHERE experiment_id = \(definition.id) FOR UPDATE")[0]
            .decode(0, as: Int64.self)
        released.finish()
        let answered = try await answer
        _ = try blocker.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
            """)
        try blocker.execute("ROLLBACK")
        let runs = try await ExperimentStore(pool: pool).runs(definition.id)
        await pool.close()
        switch try #require(answered, "the manual run was not answered within \(Self.patience)") {
        case .failure(let error): return (error, runID, runs)
        case .success: throw ManualRunTimeoutTestsError.answeredWithAResult
        }
    }
}

enum ManualRunTimeoutTestsError: Error {
    /// A run whose result could not be stored was answered with it.
    case answeredWithAResult
}
