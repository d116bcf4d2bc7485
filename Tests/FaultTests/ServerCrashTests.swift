import EngageAPI
import Foundation
import Postgres
import Testing
import TestSupport

@Suite("Faults: the server killed under load")
struct ServerCrashTests {
    /// Four clients keep sending; `engage serve` is killed with SIGKILL at random moments, four
    /// times, and restarted on the same port. Clients resend every batch not acknowledged, with
    /// the same ids. In the end the log holds exactly the acknowledged events, each once.
    @Test(.timeLimit(.minutes(3)))
    func killedServerLosesNothingAcknowledgedAndRetriesAddNoDuplicates() async throws {
        let workspace = try FaultWorkspace("server-crash")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let key = try await KeyStore(pool: pool).create(app: "crash", role: .ingest).secret
        var (server, port) = try await EngageProcess.readyServer(database: database, workspace: workspace, name: "serve-0")

        let load = IngestLoad(key: key, ports: [port])
        async let clients: Void = load.run(clients: 4)
        for crash in 1...4 {
            // Killed while it takes load, at a moment nobody chose.
            try await load.waitForAcknowledgements(300)
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...500)))
            try await server.kill()
            (server, port) = try await EngageProcess.readyServer(port: port, database: database, workspace: workspace, name: "serve-\(crash)")
        }
        try await load.waitForAcknowledgements(300)
        load.stop()
        await clients

        #expect(try await server.terminate() == 0)
        try await load.expectLogMatches(pool, app: "crash")
        // The kills cut clients off: they had to resend.
        #expect(load.snapshot.connectionFailures > 0)
        await pool.close()
    }
}
