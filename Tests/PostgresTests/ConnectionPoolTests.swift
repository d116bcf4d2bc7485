import EmbeddedPostgres
import Foundation
import Postgres
import Synchronization
import Testing
import TestSupport

@Suite("Connection pool")
struct ConnectionPoolTests {
    /// Three tasks holding the three connections at once open three sessions; forty tasks after
    /// them reuse those three and open none.
    @Test(.timeLimit(.minutes(1)))
    func manyTasksShareFewConnections() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(migrated: false), size: 3)
        let gate = Gate()
        let holders = (0..<3).map { _ in
            Task { try await pool.withConnection { connection in
                gate.wait()
                return connection.backendPID
            } }
        }
        try await pollUntil { pool.statistics.inUse == 3 }
        gate.open()
        var opened = Set<Int32>()
        for holder in holders { opened.insert(try await holder.value) }
        #expect(opened.count == 3)

        let pids = try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    try await pool.withConnection { connection in
                        _ = try connection.query("SELECT pg_sleep(0.01)")
                        return connection.backendPID
                    }
                }
            }
            return try await group.reduce(into: Set<Int32>()) { $0.insert($1) }
        }
        #expect(pids.isSubset(of: opened))
        #expect(pool.statistics == .init(size: 3, inUse: 0, waiting: 0))
        await pool.close()
    }

    /// A service asked to stop while its query waits for a server that does not answer stops
    /// at once: cancelling the task closes the connection under the blocked call.
    @Test(.timeLimit(.minutes(1)))
    func cancellingTheWaitingTaskInterruptsItsQuery() async throws {
        let database = try TestPostgres.freshDatabase(migrated: false)
        let pool = ConnectionPool(configuration: database, size: 1)
        let pid = try await pool.withConnection { $0.backendPID }
        let admin = try Connection(configuration: database)
        defer { admin.close() }
        try await Self.cancelSleepingBody(on: pool, of: pid, watchedBy: admin, answerLimit: nil)
        // The server may still run the abandoned statement (until it sees the client gone, within
        // a second: `AbandonedStatementTests`); the pool has moved on to a new session.
        _ = try admin.query("SELECT pg_terminate_backend(\(pid))")
        #expect(try await pool.withConnection { $0.backendPID } != pid)

        // Told not to, cancellation ends only the wait for a connection: a started body finishes.
        let finishing = Task {
            try await pool.withConnection(interruptingOnCancel: false) { connection -> Int in
                try connection.query("SELECT pg_sleep(0.3), 7")[0].decode(1)
            }
        }
        try await pollUntil { pool.statistics.inUse == 1 }
        finishing.cancel()
        #expect(try await finishing.value == 7)
        await pool.close()
    }

    @Test func connectionLeftInATransactionIsNeverHandedOutAgain() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(migrated: false), size: 1)
        let first = try await pool.withConnection { connection in
            try connection.execute("BEGIN")
            return connection.backendPID
        }
        let (second, idle) = try await pool.withConnection { connection in (connection.backendPID, connection.isIdle) }
        #expect(idle)
        // Rolled back and reused, or replaced: either way no open transaction leaks.
        _ = (first, second)
        await pool.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func terminatedConnectionIsReplaced() async throws {
        let configuration = try TestPostgres.freshDatabase(migrated: false)
        let pool = ConnectionPool(configuration: configuration, size: 1)
        let victim = try await pool.withConnection { $0.backendPID }
        let killer = try Connection(configuration: configuration)
        defer { killer.close() }
        // With a timeout, pg_terminate_backend returns once the backend has exited, its socket closed.
        #expect(try killer.query("SELECT pg_terminate_backend(\(victim), 60000)")[0].decode(0, as: Bool.self))
        let replacement = try await pool.withConnection { connection in
            (connection.backendPID, try connection.query("SELECT 7")[0].decode(0, as: Int.self))
        }
        #expect(replacement.0 != victim)
        #expect(replacement.1 == 7)
        await pool.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func waitersAreCancellable() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(migrated: false), size: 1)
        let gate = Gate()
        let holding = Task { try await pool.withConnection { _ in gate.wait() } }
        try await pollUntil { pool.statistics.inUse == 1 }
        let waiter = Task { try await pool.withConnection { _ in 1 } }
        try await pollUntil { pool.statistics.waiting == 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(pool.statistics == .init(size: 1, inUse: 1, waiting: 0))
        gate.open()
        try await holding.value
        // The cancelled waiter took nothing: the connection is free again.
        #expect(try await pool.withConnection { _ in 2 } == 2)
        await pool.close()
        await #expect(throws: PostgresError.self) { try await pool.withConnection { _ in 1 } }
    }

    @Test(.timeLimit(.minutes(2)))
    func reconnectsAfterTheServerRestarts() async throws {
        // A cluster of its own: restarting the shared one would disturb other tests.
        let directory = "/tmp/engage-restart-\(getpid())-\(UUID().uuidString.prefix(6))"
        let cluster = try EmbeddedPostgres(options: .init(dataDirectory: directory, database: "restart",
                                                          settings: ["fsync": "off"]))
        #expect(try cluster.start() == .started)
        // A second engage finding the cluster running reuses it (and must not stop it).
        #expect(try cluster.start() == .alreadyRunning)
        #expect(try cluster.status() == .running)
        defer {
            try? cluster.stop(mode: "immediate")
            try? FileManager.default.removeItem(atPath: directory)
        }
        let pool = ConnectionPool(configuration: cluster.configuration(), size: 2)
        let before = try await pool.withConnection { $0.backendPID }
        try cluster.stop()
        await #expect(throws: PostgresError.self) { try await pool.withConnection { _ = try $0.query("SELECT 1") } }
        #expect(try cluster.start() == .started)
        // The broken connection is discarded; the next use reconnects by itself.
        let after = try await pool.withConnection { connection in
            (connection.backendPID, try connection.query("SELECT 1")[0].decode(0, as: Int.self))
        }
        #expect(after.0 != before)
        #expect(after.1 == 1)
        await pool.close()
    }

    /// Starts a body that sleeps on `pool`'s session `pid`, waits until the server runs it, cancels
    /// its task and expects a cancellation, with or without an answer limit.
    static func cancelSleepingBody(on pool: ConnectionPool, of pid: Int32, watchedBy admin: Connection, answerLimit: Duration?,
                                   sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let sleeping = Task { try await pool.withConnection(answerLimit: answerLimit) { try $0.query("SELECT pg_sleep(600)") } }
        try await pollUntil {
            try admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid) AND wait_event = 'PgSleep'")[0].decode(0, as: Int.self) == 1
        }
        sleeping.cancel()
        await #expect(throws: CancellationError.self, sourceLocation: sourceLocation) { try await sleeping.value }
    }
}

/// Holds the pool's threads inside `withConnection` until the test opens it.
private final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let opened = Mutex(false)

    func wait() {
        if opened.withLock({ $0 }) { return }
        semaphore.wait()
        semaphore.signal()
    }

    func open() {
        opened.withLock { $0 = true }
        semaphore.signal()
    }
}
