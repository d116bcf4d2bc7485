import EmbeddedPostgres
import EngageAPI
import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

/// PostgreSQL stopped under a running `engage serve`; a cluster of its own, since stopping the
/// shared one would break every other test.
@Suite("Faults: PostgreSQL stopped and restarted under load")
struct DatabaseRestartTests {
    @Test(.timeLimit(.minutes(3)))
    func outageIs503ThenEngageRecoversByItselfWithNothingLost() async throws {
        let workspace = try FaultWorkspace("pg-restart")
        defer { workspace.remove() }
        let cluster = try EmbeddedPostgres(options: .init(dataDirectory: workspace.file("pg"), database: "outage", settings: ["fsync": "off"]))
        #expect(try cluster.start() == .started)
        defer { try? cluster.stop(mode: "immediate") }
        let database = cluster.configuration()
        do {
            let connection = try Connection(configuration: database)
            defer { connection.close() }
            try Migrator.fromSQLDirectory().migrate(connection)
        }
        let pool = ConnectionPool(configuration: database, size: 1)
        let key = try await KeyStore(pool: pool).create(app: "outage", role: .ingest).secret
        let (server, port) = try await EngageProcess.readyServer(database: database, workspace: workspace, name: "serve")

        let load = IngestLoad(key: key, ports: [port])
        async let clients: Void = load.run(clients: 3)
        try await load.waitForAcknowledgements(300)

        try cluster.stop()
        // The clients are told to come back later, not left hanging, and readiness says why.
        try await waitFor("the clients to get 503s") { load.snapshot.refusals[503, default: 0] >= 10 }
        let ready = try await offPool { try RawHTTPClient(port: port).request("GET", "/readyz") }
        #expect(ready.status == 503)
        #expect(ready.headers["Retry-After"] == "5")
        #expect(ready.headers["Content-Type"] == "application/problem+json")
        #expect(ready.text.contains(#""type":"https://engage.dev/problems/database-unavailable""#))
        #expect(try await offPool { try RawHTTPClient(port: port).request("GET", "/healthz").status } == 200)

        #expect(try cluster.start() == .started)
        try await load.waitForAcknowledgements(300)
        try await server.waitUntilReady(port: port)
        load.stop()
        await clients

        #expect(server.isRunning, "engage serve died during the outage")
        #expect(try await server.terminate() == 0)
        try await load.expectLogMatches(pool, app: "outage")
        #expect(load.snapshot.refusals.keys.sorted() == [503])
        await pool.close()
    }

    private func waitFor(_ what: String, timeout: Duration = .seconds(60), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw FaultTestError("no \(what) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
