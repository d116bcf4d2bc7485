import EngageAPI
import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// `engage serve --synchronous-standbys 1` on a primary that runs alone (here the test cluster,
/// which has no standby at all; a pg_auto_failover primary in `wait_primary` is one too): readiness
/// says why nothing is acknowledged, and each ingest request is answered 503 with Retry-After
/// although its events are committed on the primary, so the device keeps them and resends.
@Suite("Ingestion when a synchronous standby is required")
struct RequiredStandbysTests {
    @Test func aPrimaryWithoutTheRequiredStandbyIsNotReadyAndAcknowledgesNothing() async throws {
        let server = try TestServer { $0.requiredSynchronousStandbys = 1 }
        let key = try await server.key(app: uniqueApp("alone"))

        try expectProblem(try await server.request("GET", "/readyz"), Self.missingOneStandby, retryAfter: "5")
        let events = WireEvent.valid(3)
        try expectProblem(try await server.post(events.array, key: key), .unconfirmedCommit, retryAfter: "5")
        // Stored on the primary, answered as not stored: the resend is refused the same way.
        #expect(try await server.storedCount(ids: events.ids) == 3)
        try expectProblem(try await server.post(events.array, key: key), .unconfirmedCommit, retryAfter: "5")
        #expect(try await server.request("GET", "/healthz").status == 200)
        await server.stop()

        // The default trusts the server's setting, which asks for no standby here.
        let trusting = try TestServer()
        #expect(try await trusting.request("GET", "/readyz").status == 200)
        try expectAccepted(try await trusting.post(events.array, key: try await trusting.key(app: uniqueApp("trusting"))),
                           Acceptance(accepted: 3))
        await trusting.stop()
    }

    /// The floor given on the database's configuration (`PostgresConfiguration.requiredSynchronousStandbys`,
    /// the name docs/high-availability.md gives it) holds for the server too: the server's own
    /// option may raise it, never lower it to the option's default.
    @Test func aFloorGivenOnTheDatabaseConfigurationIsKept() async throws {
        var database = try TestPostgres.freshDatabase()
        database.requiredSynchronousStandbys = 1
        var configuration = EngageServer.Configuration()
        configuration.http.port = 0
        configuration.poolSize = 2
        let engage = try EngageServer(configuration: configuration, database: database,
                                      logger: Logger(label: "test", level: .debug, sink: MemoryLogSink()))
        let running = Task { try await engage.run() }
        let client = LoopbackClient(port: engage.port)
        try expectProblem(try await client.request("GET", "/readyz"), Self.missingOneStandby, retryAfter: "5")
        let key = try await engage.keys.create(app: uniqueApp("database-floor"), role: .ingest).secret
        try expectProblem(try await client.post(WireEvent.valid(2).array, key: key), .unconfirmedCommit, retryAfter: "5")
        running.cancel()
        _ = try? await running.value
        await engage.closePools()
    }

    /// An experiment created through the API on such a primary: made, not acknowledged (503
    /// without Retry-After, and a detail saying to read it back); reading it back finds it, and a repeat
    /// finds it made.
    @Test func anExperimentCreatedOnAPrimaryWithoutTheRequiredStandbyIsNotAcknowledged() async throws {
        let server = try TestServer { $0.requiredSynchronousStandbys = 1 }
        let app = uniqueApp("experiment")
        let admin = [("Authorization", "Bearer \(try await server.key(app: app, role: .admin))"), ("Content-Type", "application/json")]
        let id = "alone-\(UUID().uuidString.prefix(8).lowercased())"
        let definition = #"{"id":"\#(id)","app_id":"\#(app)","arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},"#
            + #"{"name":"treatment","strategy":"adaptive","weight":0.5}],"primary_metric":"open","schedule":"0 * * * *"}"#

        // Readiness, which an operator reads to learn why, names experiment changes too.
        let ready = try await server.request("GET", "/readyz")
        #expect(ready.status == 503 && ready.text.contains("every ingest request and experiment change is refused"), "\(ready.text)")
        let created = try await server.request("POST", "/v1/experiments", headers: admin, body: Array(definition.utf8))
        // Without Retry-After: the next step is reading it back, not repeating it after a pause.
        try expectProblem(created, Self.changeUnconfirmed)
        #expect(try await server.request("GET", "/v1/experiments/\(id)", headers: admin).status == 200)
        let repeated = try await server.request("POST", "/v1/experiments", headers: admin, body: Array(definition.utf8))
        #expect(repeated.status == 409, "\(repeated.text)")
        try expectProblem(try await server.request("POST", "/v1/experiments/\(id)/start", headers: admin), Self.changeUnconfirmed)
        await server.stop()
    }

    static let changeUnconfirmed = Problem(
        "change-unconfirmed", status: 503, title: "The change is not confirmed on the synchronous standbys",
        detail: "the change was committed on the primary but not confirmed on the synchronous standbys; a failover now could undo it: "
            + "read the experiment back before repeating the request (a repeat may answer 409)")

    static let missingOneStandby = Problem(
        "synchronous-standbys-missing", status: 503, title: "Fewer synchronous standbys than required are streaming",
        detail: "1 more synchronous standby must stream from the primary before a commit can be confirmed (--synchronous-standbys); "
            + "until then every ingest request and experiment change is refused (devices keep their events; an experiment's change is "
            + "made on the primary, not acknowledged)")
}
