import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// A unit of work interrupted on a database that answers (a read route's bound, the projector's
/// or the scheduler's, past on a busy server) only shuts its socket: the statement it abandoned
/// must end on the server too, with its transaction and locks, instead of running until it tries
/// to answer. Retried reads would otherwise pile up behind the ones they replaced.
@Suite("Statements abandoned by an interruption")
struct AbandonedStatementTests {
    @Test(.timeLimit(.minutes(1)))
    func theServerEndsAStatementWhoseTimeLimitPassed() async throws {
        let database = try TestPostgres.freshDatabase(migrated: false)
        let pool = ConnectionPool(configuration: database, size: 1)
        let pid = try await pool.withConnection { $0.backendPID }
        let answered = try await withTimeLimit(.milliseconds(500)) {
            try await pool.withTransaction { try $0.query("SELECT pg_sleep(600)") }
        }
        #expect(answered == nil)
        let admin = try Connection(configuration: database)
        defer { admin.close() }
        // Ended by the server itself, well before the 600 s the statement asked for.
        try await pollUntil(every: .milliseconds(50)) {
            try admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid)")[0].decode(0, as: Int.self) == 0
        }
        #expect(try await pool.withConnection { $0.isIdle })
        await pool.close()
    }
}
