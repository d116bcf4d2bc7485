import Foundation
import Postgres
import Testing
import TestSupport

/// `silenceLimit` bounds the time a pooled body waits for the server's next result, not the
/// body as a whole: many statements each answered run on past it, one that gets no answer ends.
@Suite("Connection pool: silence limit")
struct ConnectionPoolSilenceLimitTests {
    @Test(.timeLimit(.minutes(1)))
    func statementsAnsweredInTurnRunPastTheLimitAndASilentOneEnds() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(migrated: false), size: 1)
        let limit = Duration.milliseconds(800)
        // Ten statements of 200 ms: 2 s in all, each answered well within the limit.
        let answered = try await pool.withConnection(interruptingOnCancel: false, silenceLimit: limit) { connection in
            try (0..<10).reduce(0) { sum, _ in sum + (try connection.query("SELECT pg_sleep(0.2), 1")[0].decode(1, as: Int.self)) }
        }
        #expect(answered == 10)

        let started = ContinuousClock.now
        await #expect(throws: DatabaseDidNotAnswer(limit: limit)) {
            try await pool.withConnection(interruptingOnCancel: false, silenceLimit: limit) { connection in
                _ = try connection.query("SELECT 1")
                _ = try connection.query("SELECT pg_sleep(600)")
            }
        }
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(try await pool.withConnection { try $0.query("SELECT 7")[0].decode(0, as: Int.self) } == 7)
        await pool.close()
    }

    /// A session's state (an advisory lock, a LISTEN) belongs to one connection: a connection
    /// made anew has a serial of its own, whatever backend pid the server gives it.
    @Test func everyConnectionHasASerialOfItsOwn() throws {
        let configuration = try TestPostgres.freshDatabase(migrated: false)
        let first = try Connection(configuration: configuration)
        let second = try Connection(configuration: configuration)
        defer {
            first.close()
            second.close()
        }
        #expect(first.serial != second.serial)
    }
}
