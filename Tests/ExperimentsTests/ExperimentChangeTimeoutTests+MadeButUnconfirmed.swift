import EngageCore
import Experiments
import Postgres
import Testing
import TestSupport

extension ExperimentChangeTimeoutTests {
    /// Checks a change's `answer` (`answer(within:_:)`) says it was made on the primary but not
    /// confirmed (`.unconfirmedCommit`, never an acknowledgement), and that experiment `id` then
    /// reads back in `status` on a pool of its own. `waitForTheRow` when the primary may still hold
    /// the commit (its waiting sessions are woken only after the reload): the read-back waits for
    /// the row, bounded by the calling test's time limit. Failures name the caller's line.
    static func expectMadeButUnconfirmed<T>(_ answer: Result<T, any Error>?, id: String, status: ExperimentStatus,
                                            on database: PostgresConfiguration, waitForTheRow: Bool = false,
                                            sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let answered = try #require(answer, "the change was not answered within \(patience)", sourceLocation: sourceLocation)
        guard case .failure(let error) = answered else {
            Issue.record("a change the standbys never confirmed was acknowledged", sourceLocation: sourceLocation)
            return
        }
        #expect((error as? PostgresError)?.kind == .unconfirmedCommit, "\(error)", sourceLocation: sourceLocation)
        let admin = ConnectionPool(configuration: database, size: 1)
        if waitForTheRow {
            try await pollUntil(every: .milliseconds(20)) { try await ExperimentStore(pool: admin).get(id) != nil }
        }
        #expect(try await ExperimentStore(pool: admin).get(id)?.status == status, sourceLocation: sourceLocation)
        await admin.close()
    }
}
