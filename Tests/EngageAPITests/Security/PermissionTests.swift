import EngageAPI
import Foundation
import HTTPServer
import Testing
import TestSupport

/// Every route the router serves, with every kind of credential: no key, a malformed, unknown or
/// revoked key, each role of the app's own keys, and an admin key of another app.
///
/// The table is keyed by the router's own list of routes: a route added without a row here makes
/// `everyRouteHasARow` fail, and OpenAPIDocumentTests ties the same list to openapi.yaml.
@Suite("Permissions on every route")
struct PermissionTests {
    enum Credential: String, CaseIterable, Sendable {
        case none, malformed, unknown, revoked, ingest, read, admin, otherAppAdmin
    }

    /// What a route needs and what it answers when allowed.
    struct Access: Sendable {
        /// nil: no key needed (operations routes).
        var roles: Set<Role>?
        var success: Int
        /// The answer to an admin key of another app: the route's own answer scoped to that app
        /// (2xx), 404 for another app's object, 403 for a body naming another app.
        var otherApp: Int
        /// The request for app `fixture.app`, prepared afresh for each credential.
        var request: @Sendable (Fixture) async throws -> (target: String, body: String)
    }

    static let table: [String: Access] = [
        "POST /v1/events": Access(roles: [.ingest, .admin], success: 200, otherApp: 200) { _ in
            ("/v1/events", "[\(WireEvent.displayed().json)]")
        },
        "GET /v1/report": Access(roles: [.read, .admin], success: 200, otherApp: 200) { _ in ("/v1/report", "") },
        "GET /v1/assignments": Access(roles: [.ingest, .read, .admin], success: 200, otherApp: 200) { _ in
            ("/v1/assignments?device_id=device-1", "")
        },
        "POST /v1/assignments": Access(roles: [.ingest, .read, .admin], success: 200, otherApp: 200) { _ in
            ("/v1/assignments", #"{"device_ids":["device-1","device-2"]}"#)
        },
        "GET /v1/experiments": Access(roles: [.read, .admin], success: 200, otherApp: 200) { _ in ("/v1/experiments", "") },
        "POST /v1/experiments": Access(roles: [.admin], success: 201, otherApp: 403) { fixture in
            ("/v1/experiments", Fixture.definition(id: Fixture.newExperimentID(), app: fixture.app))
        },
        "GET /v1/experiments/:id": Access(roles: [.read, .admin], success: 200, otherApp: 404) { fixture in
            ("/v1/experiments/\(try await fixture.experiment(running: false))", "")
        },
        "POST /v1/experiments/:id/start": Access(roles: [.admin], success: 200, otherApp: 404) { fixture in
            ("/v1/experiments/\(try await fixture.experiment(running: false))/start", "")
        },
        "POST /v1/experiments/:id/stop": Access(roles: [.admin], success: 200, otherApp: 404) { fixture in
            ("/v1/experiments/\(try await fixture.experiment(running: true))/stop", "")
        },
        "POST /v1/experiments/:id/run": Access(roles: [.admin], success: 201, otherApp: 404) { fixture in
            ("/v1/experiments/\(try await fixture.experiment(running: true))/run", "")
        },
        "GET /v1/experiments/:id/runs": Access(roles: [.read, .admin], success: 200, otherApp: 404) { fixture in
            ("/v1/experiments/\(try await fixture.experiment(running: true))/runs", "")
        },
        "GET /v1/experiments/:id/history": Access(roles: [.read, .admin], success: 200, otherApp: 404) { fixture in
            ("/v1/experiments/\(try await fixture.experiment(running: true))/history", "")
        },
        "GET /v1/simulate": Access(roles: [.read, .admin], success: 200, otherApp: 200) { _ in ("/v1/simulate?strategy=full", "") },
        "GET /healthz": Access(roles: nil, success: 200, otherApp: 200) { _ in ("/healthz", "") },
        "GET /readyz": Access(roles: nil, success: 200, otherApp: 200) { _ in ("/readyz", "") },
        "GET /metrics": Access(roles: nil, success: 200, otherApp: 200) { _ in ("/metrics", "") },
    ]

    static func name(_ route: Router.Pattern) -> String { "\(route.method.rawValue) \(route.pattern)" }

    /// The API's routes; the console's pages (ConsoleAccessTests) take a cookie, not a key header.
    static func apiRoutes(_ routes: [Router.Pattern]) -> [Router.Pattern] { routes.filter { !EngageAPI.isConsole($0) } }

    @Test func everyRouteHasARow() throws {
        let server = try SharedServer.get()
        #expect(Set(Self.apiRoutes(server.engage.routes).map(Self.name)) == Set(Self.table.keys))
        // The same routes as EngageAPI.routes, which OpenAPIDocumentTests checks against openapi.yaml.
        let templates = Self.apiRoutes(server.engage.routes).map {
            $0.pattern.split(separator: "/", omittingEmptySubsequences: false)
                .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
        }
        #expect(Set(templates) == EngageAPI.routes)
    }

    @Test(.timeLimit(.minutes(3)))
    func everyRouteAnswersEveryCredentialAsTheTableSays() async throws {
        let server = try SharedServer.get()
        let fixture = try await Fixture(server: server)
        for route in Self.apiRoutes(server.engage.routes) {
            let access = try #require(Self.table[Self.name(route)], "no row for \(Self.name(route))")
            for credential in Credential.allCases {
                let (target, body) = try await access.request(fixture)
                var headers: [(String, String)] = body.isEmpty ? [] : [("Content-Type", "application/json")]
                if let key = fixture.keys[credential] { headers.append(("Authorization", "Bearer \(key)")) }
                let response = try await server.request(route.method.rawValue, target, headers: headers, body: Array(body.utf8))
                let expected = Self.expectedStatus(access, credential)
                #expect(response.status == expected, "\(Self.name(route)) with \(credential.rawValue): \(response.text.prefix(300))")
                if expected == 401 || expected == 403 {
                    #expect(response.headers["Content-Type"] == "application/problem+json")
                }
            }
        }
    }

    static func expectedStatus(_ access: Access, _ credential: Credential) -> Int {
        guard let roles = access.roles else { return access.success }
        switch credential {
        case .none, .malformed, .unknown, .revoked: return 401
        case .ingest: return roles.contains(.ingest) ? access.success : 403
        case .read: return roles.contains(.read) ? access.success : 403
        case .admin: return access.success
        case .otherAppAdmin: return access.otherApp
        }
    }

    // MARK: App isolation

    @Test(.timeLimit(.minutes(2)))
    func anotherAppsKeyWritesOnlyToItsOwnApp() async throws {
        let server = try SharedServer.get()
        let mine = try await Fixture(server: server)
        let theirs = try #require(mine.keys[.otherAppAdmin])
        let auth = [("Authorization", "Bearer \(theirs)")]

        // Events go to the key's app; naming another app in the body is refused.
        let events = WireEvent.valid(3)
        try expectAccepted(try await server.post(events.array, key: theirs), Acceptance(accepted: 3))
        #expect(try await server.storedCount(app: mine.otherApp) == 3)
        #expect(try await server.storedCount(app: mine.app) == 0)
        let smuggled = try await server.post(WireEvent.valid(1).map { WireEvent(id: $0.id, json: String($0.json.dropLast()) + #","app_id":"\#(mine.app)"}"#) }.array, key: theirs)
        #expect(smuggled.status == 400)
        #expect(try await server.storedCount(app: mine.app) == 0)

        // Another app's experiment cannot be created, started, stopped or run by this key.
        let draft = try await mine.experiment(running: false)
        let running = try await mine.experiment(running: true)
        let created = try await server.request("POST", "/v1/experiments", headers: auth + [("Content-Type", "application/json")],
                                               body: Array(Fixture.definition(id: Fixture.newExperimentID(), app: mine.app).utf8))
        #expect(created.status == 403)
        #expect(try await server.request("POST", "/v1/experiments/\(draft)/start", headers: auth).status == 404)
        #expect(try await server.request("POST", "/v1/experiments/\(running)/stop", headers: auth).status == 404)
        #expect(try await server.request("POST", "/v1/experiments/\(running)/run", headers: auth).status == 404)
        #expect(try await mine.status(of: draft) == "draft")
        #expect(try await mine.status(of: running) == "running")
        #expect(try await mine.runCount(of: running) == 0)
        #expect(try await server.count("SELECT count(*) FROM experiments WHERE app_id = \(mine.otherApp)") == 0)

        // Experiment ids are one namespace across the server's apps (docs/reliability.md): the same
        // id in this key's own app is refused as taken, and the other app's experiment stays as it was.
        let taken = try await server.request("POST", "/v1/experiments", headers: auth + [("Content-Type", "application/json")],
                                             body: Array(Fixture.definition(id: draft, app: mine.otherApp).utf8))
        #expect(taken.status == 409)
        #expect(taken.text.contains("unique across the apps of this server"), "\(taken.text)")
        #expect(try await server.request("GET", "/v1/experiments/\(draft)", headers: auth).status == 404)
        #expect(try await mine.status(of: draft) == "draft")
        #expect(try await server.count("SELECT count(*) FROM experiments WHERE app_id = \(mine.otherApp)") == 0)
    }

    @Test(.timeLimit(.minutes(2)))
    func anotherAppsKeyReadsNothingOfThisApp() async throws {
        let server = try SharedServer.get()
        let mine = try await Fixture(server: server)
        let theirs = try #require(mine.keys[.otherAppAdmin])
        let auth = [("Authorization", "Bearer \(theirs)")]
        let running = try await mine.experiment(running: true)

        let list = try await server.request("GET", "/v1/experiments", headers: auth)
        #expect(list.text == #"{"experiments":[],"unreadable":[]}"#)
        #expect(try await server.request("GET", "/v1/experiments/\(running)", headers: auth).status == 404)
        #expect(try await server.request("GET", "/v1/experiments/\(running)/runs", headers: auth).status == 404)
        #expect(try await server.request("GET", "/v1/experiments/\(running)/history", headers: auth).status == 404)
        // This app's running experiment assigns nothing to the other app's devices.
        let assignments = try await server.request("GET", "/v1/assignments?device_id=device-1", headers: auth)
        #expect(assignments.text == #"{"assignments":[]}"#)
        let own = try await server.request("GET", "/v1/assignments?device_id=device-1",
                                           headers: [("Authorization", "Bearer \(mine.keys[.ingest]!)")])
        #expect(own.text.contains(#""experiment":"\#(running)""#))
        // Reports and replays: ReportRouteTests.eachReadKeySeesOnlyItsOwnAppsNumbers, with events in
        // both apps; replays: ExperimentAPITests.lifecycleAssignmentsAndRunsThroughTheAPI.
    }
}

/// An app with a key of every role, a revoked key, and another app's admin key.
struct Fixture: Sendable {
    let server: TestServer
    let app: String
    let otherApp: String
    let keys: [PermissionTests.Credential: String]

    init(server: TestServer) async throws {
        self.server = server
        app = uniqueApp("perm")
        otherApp = uniqueApp("other")
        let revoked = try await server.keys.create(app: app, role: .admin)
        #expect(try await server.keys.revoke(keyID: revoked.key.keyID))
        keys = [
            .malformed: "not-a-key",
            .unknown: "egk_0badc0de_" + String(repeating: "ab", count: 20),
            .revoked: revoked.secret,
            .ingest: try await server.key(app: app, role: .ingest),
            .read: try await server.key(app: app, role: .read),
            .admin: try await server.key(app: app, role: .admin),
            .otherAppAdmin: try await server.key(app: otherApp, role: .admin),
        ]
    }

    static func newExperimentID() -> String { "perm-\(UUID().uuidString.prefix(8).lowercased())" }

    static func definition(id: String, app: String) -> String {
        #"{"id":"\#(id)","app_id":"\#(app)","arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},{"name":"treatment","strategy":"adaptive","weight":0.5}],"primary_metric":"open","schedule":"0 * * * *"}"#
    }

    var adminHeaders: [(String, String)] { [("Authorization", "Bearer \(keys[.admin]!)")] }

    /// A new experiment of the app, draft or running; its id.
    func experiment(running: Bool) async throws -> String {
        let id = Self.newExperimentID()
        let created = try await server.request("POST", "/v1/experiments", headers: adminHeaders + [("Content-Type", "application/json")],
                                               body: Array(Self.definition(id: id, app: app).utf8))
        try #require(created.status == 201, "\(created.text)")
        if running {
            let started = try await server.request("POST", "/v1/experiments/\(id)/start", headers: adminHeaders)
            try #require(started.status == 200, "\(started.text)")
        }
        return id
    }

    func status(of id: String) async throws -> String? {
        try await server.pool.withConnection { connection in
            try connection.query("SELECT status FROM experiments WHERE id = \(id)").rows.first?.decode(0, as: String.self)
        }
    }

    func runCount(of id: String) async throws -> Int {
        try await server.count("SELECT count(*) FROM experiment_runs WHERE experiment_id = \(id)")
    }
}
