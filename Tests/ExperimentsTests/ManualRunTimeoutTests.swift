import EngageCore
import Experiments
import Foundation
import Postgres
import Runtime
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
}
