import EngageAPI
import Foundation
import Postgres
import Testing
import TestSupport

/// `POST /v1/experiments` and `/v1/experiments/{id}/start` on a real server whose commit timeout
/// is 2 s: a change is answered within it, and the answer says whether it was made. A primary
/// waiting at the COMMIT for a synchronous standby that is gone has made it (`change-unconfirmed`,
/// without Retry-After: read it back, a blind repeat finds it made); a change that could not
/// reach its COMMIT was rolled back (`database-unavailable`: retry). A pair of this suite's own
/// (`StreamingReplication`), since every commit on it stops while it waits for `nobody`.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ExperimentChangeTimeoutRouteTests {
    static let pair = Result { try StreamingReplication(label: "apibound") }
    /// Far beyond the commit timeout: a request not answered by then is taken to wait for ever.
    static let patience = 30

    @Test func aChangeWhoseCommitWaitsForALostStandbyIsAnsweredUnconfirmed() async throws {
        let replication = try await offPool { try Self.pair.get() }
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let server = try Self.server(on: database)
        let change = try await Self.adminAndDefinition(server, name: "sync")
        let (admin, id, definition) = (change.headers, change.id, change.definition)
        try await offPool { try replication.synchronousStandby("nobody") }
        defer { try? replication.synchronousStandby(nil) }

        let created = try await Self.request(server, "POST", "/v1/experiments", headers: admin, body: definition)
        try await offPool { try replication.synchronousStandby(nil) }
        try expectProblem(created, RequiredStandbysTests.changeUnconfirmed)
        // Made: once the primary stops waiting for a standby, reading it back finds the draft.
        try await pollUntil(every: .milliseconds(20)) {
            try await server.request("GET", "/v1/experiments/\(id)", headers: admin).status == 200
        }
        try await Self.expectStatus("draft", of: id, on: server, headers: admin)
        await server.stop()
    }

    @Test func aChangeThatCannotReachItsCommitIsAnsweredUnavailableAndNotMade() async throws {
        let (database, server, draft) = try await Self.serverWithDraft(name: "locked")
        let (admin, id) = (draft.headers, draft.id)
        // Another session holds the experiment's row: the start waits for it before its COMMIT.
        let blocker = try Connection(configuration: database)
        defer { blocker.close() }
        try blocker.execute("BEGIN")
        _ = try blocker.query("SELECT 1 FROM experiments WHERE id = \(id) FOR UPDATE")

        let started = try await Self.request(server, "POST", "/v1/experiments/\(id)/start", headers: admin)
        _ = try blocker.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
            """)
        try blocker.execute("ROLLBACK")
        try expectProblem(started, .databaseUnavailable, retryAfter: "5")
        // Nothing changed: still a draft.
        try await Self.expectStatus("draft", of: id, on: server, headers: admin)
        await server.stop()
    }

    @Test func theConsolesStopThatCannotReachItsCommitSaysNothingChanged() async throws {
        let (database, server, draft) = try await Self.serverWithDraft(name: "console")
        let (admin, app, id) = (draft.headers, draft.app, draft.id)
        let client = ConsoleClient(server: server, keys: [draft.key])
        let token = try #require(ConsoleClient.formToken(try await client.get("/console/experiments/\(id)?app=\(app)")))
        let blocker = try Connection(configuration: database)
        defer { blocker.close() }
        try blocker.execute("BEGIN")
        _ = try blocker.query("SELECT 1 FROM experiments WHERE id = \(id) FOR UPDATE")
        let stopped = try await client.post("/console/experiments/\(id)/stop?app=\(app)", [("csrf", token)])
        _ = try blocker.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
            """)
        try blocker.execute("ROLLBACK")
        #expect(stopped.status == 503 && stopped.headers["Retry-After"] == "5", "\(stopped.status) \(stopped.text.prefix(300))")
        #expect(stopped.text.contains("Nothing was changed"), "\(stopped.text)")
        try await Self.expectStatus("draft", of: id, on: server, headers: admin)
        await server.stop()
    }

    static func server(on database: PostgresConfiguration) throws -> TestServer {
        try TestServer(database: database) { configuration in
            configuration.commitTimeout = .seconds(2)
            // Only the requests under test use the database.
            configuration.runProjector = false
            configuration.runScheduler = false
        }
    }

    /// An admin of an app of its own (`key`, and the `headers` of its requests) and the definition
    /// of a two-arm experiment `id` in that app.
    typealias Change = (headers: [(String, String)], key: String, app: String, id: String, definition: [UInt8])

    static func adminAndDefinition(_ server: TestServer, name: String) async throws -> Change {
        let app = uniqueApp("bound-\(name)")
        let key = try await server.key(app: app, role: .admin)
        let id = "bound-\(name)-\(UUID().uuidString.prefix(8).lowercased())"
        let definition = #"{"id":"\#(id)","app_id":"\#(app)","arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},"#
            + #"{"name":"treatment","strategy":"adaptive","weight":0.5}],"primary_metric":"open","schedule":"0 * * * *"}"#
        return ([("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")], key, app, id, Array(definition.utf8))
    }

    /// A server (`server(on:)`) on a fresh database of the test cluster, where the experiment of
    /// `adminAndDefinition(_:name:)` has been created (201), a draft.
    static func serverWithDraft(name: String, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> (database: PostgresConfiguration, server: TestServer, draft: Change) {
        let database = try await offPool { try TestPostgres.freshDatabase() }
        let server = try Self.server(on: database)
        let draft = try await Self.adminAndDefinition(server, name: name)
        let created = try await server.request("POST", "/v1/experiments", headers: draft.headers, body: draft.definition)
        #expect(created.status == 201, "\(created.text.prefix(300))", sourceLocation: sourceLocation)
        return (database, server, draft)
    }

    /// Reads experiment `id` back and expects it in `status` (as its JSON spells it).
    static func expectStatus(_ status: String, of id: String, on server: TestServer, headers: [(String, String)],
                             sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let shown = try await server.request("GET", "/v1/experiments/\(id)", headers: headers)
        #expect(shown.text.contains(#""status":"\#(status)""#), "\(shown.status) \(shown.text.prefix(300))",
                sourceLocation: sourceLocation)
    }

    /// The server's answer, read for at most `patience` seconds (`RawHTTPClient.Failure.timedOut`
    /// past them).
    static func request(_ server: TestServer, _ method: String, _ target: String, headers: [(String, String)],
                        body: [UInt8] = []) async throws -> RawHTTPClient.Response {
        let port = server.port
        return try await offPool {
            try RawHTTPClient(port: port, receiveTimeout: patience).request(method, target, headers: headers, body: body)
        }
    }
}
