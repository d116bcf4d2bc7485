import EngageCore
import Experiments
import Foundation
import Postgres
import Testing
import TestSupport

/// An experiment's change whose session is lost while its COMMIT waits for the synchronous
/// standby (a fast shutdown or a terminated backend: PostgreSQL warns "The transaction has
/// already committed locally" and closes the session). The change is made on the primary, so it
/// must be answered as unconfirmed (the API's `change-unconfirmed`: read it back), not as a
/// database that did not answer (`database-unavailable`, "nothing from this request was
/// stored"). A pair of this suite's own (`StreamingReplication`): every commit on it waits.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ExperimentChangeLostInItsCommitTests {
    @Test func aSessionLostWhileItsCommitWaitsForTheStandbyLeavesTheChangeUnconfirmed() async throws {
        let replication = try await offPool { try StreamingReplication(label: "expcommit") }
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let pool = ConnectionPool(configuration: database, size: 1)
        let definition = try Fixtures.definition()
        try await offPool { try replication.synchronousStandby("nobody") }

        let change = Task { try await ExperimentStore(pool: pool).create(definition) }
        try await pollUntil { try replication.commitsWaitingForStandby() == 1 }
        try await offPool {
            try replication.withPrimary { connection in
                _ = try connection.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
            }
        }
        let refused = await #expect(throws: PostgresError.self) { try await change.value }
        #expect(refused?.kind == .unconfirmedCommit, "\(String(describing: refused))")

        // It was made: the primary has the draft.
        try await offPool { try replication.synchronousStandby(nil) }
        let admin = ConnectionPool(configuration: database, size: 1)
        #expect(try await ExperimentStore(pool: admin).get(definition.id)?.status == .draft)
        await pool.close()
        await admin.close()
    }
}
