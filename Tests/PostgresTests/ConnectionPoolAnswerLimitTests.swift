import Foundation
import Postgres
import Testing
import TestSupport

/// `answerLimit` bounds a pooled body once it has its connection; past it the body's connection
/// is closed under it and the caller gets one typed error, whose description the services log as
/// it is.
@Suite("Connection pool: answer limit")
struct ConnectionPoolAnswerLimitTests {
    @Test(.timeLimit(.minutes(1)))
    func aBodyWithoutAnAnswerThrowsDatabaseDidNotAnswer() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(migrated: false), size: 1)
        let pid = try await pool.withConnection { $0.backendPID }
        let started = ContinuousClock.now
        await #expect(throws: DatabaseDidNotAnswer(limit: .milliseconds(500))) {
            try await pool.withConnection(answerLimit: .milliseconds(500)) { _ = try $0.query("SELECT pg_sleep(600)") }
        }
        #expect(ContinuousClock.now - started < .seconds(10))
        // The interrupted connection is not handed out again.
        #expect(try await pool.withConnection { $0.backendPID } != pid)

        await #expect(throws: DatabaseDidNotAnswer(limit: .milliseconds(300))) {
            try await pool.withTransaction(answerLimit: .milliseconds(300)) { _ = try $0.query("SELECT pg_sleep(600)") }
        }
        #expect(String(describing: DatabaseDidNotAnswer(limit: .seconds(30))) == "the database did not answer within 30.0 seconds")
        #expect(String(describing: DatabaseDidNotAnswer(limit: .milliseconds(500))) == "the database did not answer within 0.5 seconds")
        // Answered in time, the body's value comes back as without a limit.
        #expect(try await pool.withConnection(answerLimit: .seconds(30)) { try $0.query("SELECT 7")[0].decode(0, as: Int.self) } == 7)
        await pool.close()
    }

    /// A body that cancellation must not interrupt (it runs to its end once started) is still
    /// bounded by its answer limit: `interruptingOnCancel: false` says nothing about a database
    /// that does not answer.
    @Test(.timeLimit(.minutes(1)))
    func aBodyNotInterruptedOnCancelIsStillBoundedByItsLimit() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(migrated: false), size: 1)
        let pid = try await pool.withConnection { $0.backendPID }
        let started = ContinuousClock.now
        await #expect(throws: DatabaseDidNotAnswer(limit: .milliseconds(500))) {
            try await pool.withConnection(interruptingOnCancel: false, answerLimit: .milliseconds(500)) {
                _ = try $0.query("SELECT pg_sleep(8)")
            }
        }
        #expect(ContinuousClock.now - started < .seconds(6))
        // The interrupted connection is not handed out again; one answered in time is.
        let next = try await pool.withConnection { $0.backendPID }
        #expect(next != pid)
        #expect(try await pool.withConnection(interruptingOnCancel: false, answerLimit: .seconds(30)) { $0.backendPID } == next)

        // Cancelling its task still leaves a started body to finish, limit or not.
        let body = Task {
            try await pool.withConnection(interruptingOnCancel: false, answerLimit: .seconds(30)) { connection -> Int32 in
                _ = try connection.query("SELECT pg_sleep(0.5)")
                return connection.backendPID
            }
        }
        let admin = try Connection(configuration: pool.configuration)
        defer { admin.close() }
        try await pollUntil {
            try admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(next) AND wait_event = 'PgSleep'")[0]
                .decode(0, as: Int.self) == 1
        }
        body.cancel()
        #expect(try await body.value == next)
        _ = try admin.query("SELECT pg_terminate_backend(\(pid))")
        await pool.close()
    }

    /// A bounded body whose task is cancelled before its limit passes is a cancellation, as
    /// without a limit (services stopping tell it apart from a database gone: the scheduler does
    /// not charge the run an attempt for it), and its connection is not handed out again. The
    /// same for a timed-out transaction's connection.
    @Test(.timeLimit(.minutes(1)))
    func aCancelledBoundedBodyIsACancellationAndItsConnectionIsDropped() async throws {
        let database = try TestPostgres.freshDatabase(migrated: false)
        let pool = ConnectionPool(configuration: database, size: 1)
        let pid = try await pool.withConnection { $0.backendPID }
        let admin = try Connection(configuration: database)
        defer { admin.close() }
        try await ConnectionPoolTests.cancelSleepingBody(on: pool, of: pid, watchedBy: admin, answerLimit: .seconds(60))
        let next = try await pool.withConnection { $0.backendPID }
        #expect(next != pid)

        await #expect(throws: DatabaseDidNotAnswer(limit: .milliseconds(300))) {
            try await pool.withTransaction(answerLimit: .milliseconds(300)) { _ = try $0.query("SELECT pg_sleep(600)") }
        }
        #expect(try await pool.withConnection { $0.backendPID } != next)
        // The server may still run the abandoned statements until it sees their clients gone.
        for abandoned in [pid, next] { _ = try admin.query("SELECT pg_terminate_backend(\(abandoned))") }
        await pool.close()
    }
}
