import EmbeddedPostgres
import Foundation
import Postgres
import Synchronization
import Testing
import TestSupport

@Suite("Connection pool")
struct ConnectionPoolTests {
    @Test func manyTasksShareFewConnections() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(migrated: false), size: 3)
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
        #expect(pids.count <= 3)
        #expect(pids.count >= 1)
        #expect(pool.statistics == .init(size: 3, inUse: 0, waiting: 0))
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

    @Test func terminatedConnectionIsReplaced() async throws {
        let configuration = try TestPostgres.freshDatabase(migrated: false)
        let pool = ConnectionPool(configuration: configuration, size: 1)
        let victim = try await pool.withConnection { $0.backendPID }
        let killer = try Connection(configuration: configuration)
        _ = try killer.query("SELECT pg_terminate_backend(\(victim))")
        // Give the server a moment to close the socket.
        try await Task.sleep(for: .milliseconds(200))
        let replacement = try await pool.withConnection { connection in
            (connection.backendPID, try connection.query("SELECT 7")[0].decode(0, as: Int.self))
        }
        #expect(replacement.0 != victim)
        #expect(replacement.1 == 7)
        await pool.close()
    }

    @Test func waitersAreCancellable() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(migrated: false), size: 1)
        let holding = Task { try await pool.withConnection { connection in _ = try connection.query("SELECT pg_sleep(1)") } }
        try await Task.sleep(for: .milliseconds(100))
        let waiter = Task { try await pool.withConnection { _ in 1 } }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        try await holding.value
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
}
