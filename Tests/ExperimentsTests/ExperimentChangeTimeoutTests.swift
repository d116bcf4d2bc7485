import EngageCore
import Experiments
import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// An experiment's change is answered within its commit timeout, whatever the database does, and
/// the answer says whether the change was made: a primary waiting at its COMMIT for a synchronous
/// standby that is gone (named in `synchronous_standby_names`, not streaming) has made it
/// (`.unconfirmedCommit`: read it back); a change that could not reach its COMMIT (here: a lock
/// another session holds) was rolled back (`DatabaseDidNotAnswer`: retry). A pair of this suite's
/// own (`StreamingReplication`), since every commit on it stops while it waits for `nobody`.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ExperimentChangeTimeoutTests {
    static let pair = Result { try StreamingReplication(label: "expbound") }
    /// Far beyond the commit timeout: a change not answered by then is taken to wait for ever.
    static let patience = Duration.seconds(30)

    @Test func aChangeWhoseCommitWaitsForALostStandbyIsAnsweredUnconfirmedWithinItsTimeout() async throws {
        let replication = try await offPool { try Self.pair.get() }
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let pool = ConnectionPool(configuration: database, size: 1)
        let store = ExperimentStore(pool: pool, commitTimeout: .seconds(2))
        let definition = try Fixtures.definition(id: "bound-create")
        try await offPool { try replication.synchronousStandby("nobody") }
        defer { try? replication.synchronousStandby(nil) }

        let started = ContinuousClock.now
        let answer = try await Self.answer(within: Self.patience) { try await store.create(definition) }
        let waited = ContinuousClock.now - started
        try await offPool { try replication.synchronousStandby(nil) }
        #expect(waited < .seconds(12), "answered after \(waited)")
        // Made: once the primary stops waiting for a standby, the draft is there.
        try await Self.expectMadeButUnconfirmed(answer, id: definition.id, status: .draft, on: database, waitForTheRow: true)
        await pool.close()
    }

    /// Committed at once (no standby is configured on the test cluster), but one is required, so
    /// the check after the COMMIT waits for it (`StandbyConfirmation.recheckWindow`, 3 s) and the
    /// commit timeout interrupts that wait: the change is made, so it must not come back as the
    /// pool's "did not answer" (`DatabaseDidNotAnswer`, nothing changed).
    @Test func aChangeInterruptedWhileItsCommittedChangeAwaitsTheStandbysIsUnconfirmed() async throws {
        var database = try await offPool { try TestPostgres.freshDatabase() }
        database.requiredSynchronousStandbys = 1
        let pool = ConnectionPool(configuration: database, size: 1)
        let store = ExperimentStore(pool: pool, commitTimeout: .seconds(1))
        let definition = try Fixtures.definition(id: "bound-recheck")

        let answer = try await Self.answer(within: Self.patience) { try await store.create(definition) }
        try await Self.expectMadeButUnconfirmed(answer, id: definition.id, status: .draft, on: database)
        await pool.close()
    }

    @Test func aChangeThatCannotReachItsCommitIsRolledBackWithinItsTimeout() async throws {
        let database = try await offPool { try TestPostgres.freshDatabase() }
        let pool = ConnectionPool(configuration: database, size: 1)
        let store = ExperimentStore(pool: pool, commitTimeout: .seconds(2))
        let definition = try Fixtures.definition(id: "bound-locked")
        // Another session holds a lock every insert into experiments waits for.
        let blocker = try Connection(configuration: database)
        defer { blocker.close() }
        try blocker.execute("BEGIN")
        try blocker.execute("LOCK TABLE experiments IN SHARE MODE")

        let answer = try await Self.answer(within: Self.patience) { try await store.create(definition) }
        // The abandoned session, still waiting for the lock on the server, goes before the lock does.
        _ = try blocker.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
            """)
        try blocker.execute("ROLLBACK")
        let answered = try #require(answer, "the change was not answered within \(Self.patience)")
        guard case .failure(let error) = answered else {
            Issue.record("a change that waited for a lock was made")
            return
        }
        #expect(error as? DatabaseDidNotAnswer == DatabaseDidNotAnswer(limit: .seconds(2)), "\(error)")
        let admin = ConnectionPool(configuration: database, size: 1)
        #expect(try await ExperimentStore(pool: admin).get(definition.id) == nil)
        await pool.close()
        await admin.close()
    }

    /// The COMMIT is made (its wait for the standbys cancelled: a warning, then success), and the
    /// check after it, in the same round trip, fails with an error of the server's (here the
    /// setting's count of standbys, past an int, which PostgreSQL takes but the check cannot
    /// read). The change is made, so it must not come back as a plain server error, which the
    /// routes answer `database-unavailable`, "nothing changed".
    @Test func aServerErrorAfterTheCommitWasMadeIsUnconfirmed() async throws {
        let replication = try await offPool { try Self.pair.get() }
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let pool = ConnectionPool(configuration: database, size: 1)
        let store = ExperimentStore(pool: pool)
        let definition = try Fixtures.definition(id: "bound-after")
        try await offPool { try replication.synchronousStandby("99999999999 (nobody)") }
        defer { try? replication.synchronousStandby(nil) }

        let change = Task { try await Self.answer(within: Self.patience) { try await store.create(definition) } }
        try await pollUntil(every: .milliseconds(20)) { try replication.commitsWaitingForStandby() == 1 }
        try await offPool {
            try replication.withPrimary { connection in
                _ = try connection.query("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
            }
        }
        let answer = try await change.value
        try await offPool { try replication.synchronousStandby(nil) }
        try await Self.expectMadeButUnconfirmed(answer, id: definition.id, status: .draft, on: database)
        await pool.close()
    }

    /// `change`'s outcome, or nil when it did not come within `limit` (the change is then
    /// cancelled, which interrupts its pooled connection: the test does not hang).
    static func answer<T: Sendable>(within limit: Duration, _ change: @escaping @Sendable () async throws -> T) async throws
        -> Result<T, any Error>? {
        try await withTimeLimit(limit) {
            do { return .success(try await change()) } catch { return .failure(error) }
        }
    }
}
