import EngageAPI
import HTTPServer
import Testing
import TestSupport

/// Who may call what, on every route, decided before anything is read from a database: the
/// server here has none. PermissionTests checks the same table end to end, with PostgreSQL.
@Suite("Route access without a database")
struct RouteAccessTests {
    /// A request to `route` with its parameters filled in.
    static func target(_ route: Router.Pattern) -> String {
        route.pattern.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(":") ? "some-id" : String($0) }.joined(separator: "/")
    }

    @Test func everyRouteRefusesAMissingKeyWith401AndAWrongRoleWith403() async throws {
        try await RouteTestServer.withServer { server in
            #expect(Set(PermissionTests.apiRoutes(server.routes).map(PermissionTests.name)) == Set(PermissionTests.table.keys))
            var checked = 0
            for route in PermissionTests.apiRoutes(server.routes) {
                guard let roles = try #require(PermissionTests.table[PermissionTests.name(route)]).roles else { continue }
                let headers = [("Content-Type", "application/json")]
                let missing = try await server.request(route.method.rawValue, Self.target(route), headers: headers, body: Array("{}".utf8))
                try expectProblem(missing, .unauthorized("send the key as Authorization: Bearer <key>"))
                for role in Role.allCases where !roles.contains(role) {
                    let key = server.keys.issue(app: "app-1", role: role)
                    let response = try await server.request(route.method.rawValue, Self.target(route),
                                                            headers: headers + [("Authorization", "Bearer \(key)")], body: Array("{}".utf8))
                    #expect(response.status == 403, "\(PermissionTests.name(route)) with a \(role) key")
                    #expect(response.headers["Content-Type"] == "application/problem+json")
                    #expect(response.text.contains(#""type":"https://engage.dev/problems/forbidden""#))
                    checked += 1
                }
            }
            // Ingest keys on the six read routes, ingest and read keys on the four admin routes,
            // read keys on the event route.
            #expect(checked == 15)
            #expect(server.events.storedIDs.isEmpty)
        }
    }

    @Test func aPermittedKeyReachesTheRouteWhichFindsNoDatabase() async throws {
        try await RouteTestServer.withServer { server in
            let key = server.keys.issue(app: "app-1", role: .read)
            let response = try await server.request("GET", "/v1/report", headers: [("Authorization", "Bearer \(key)")])
            try expectProblem(response, .databaseUnavailable, retryAfter: "5")
        }
    }

    /// libmicrohttpd's own messages (here: a connection over the per-address limit, closed) reach
    /// the server's log as warnings.
    @Test(.timeLimit(.minutes(1)))
    func libmicrohttpdMessagesAreLogged() async throws {
        try await RouteTestServer.withServer(configure: { $0.http.maxConnectionsPerAddress = 1 }) { server in
            let port = server.port
            let outcome = try await offPool { () -> [String] in
                let open = try RawHTTPClient(port: port)
                let first = try open.request("GET", "/healthz").status
                let extra = try RawHTTPClient(port: port)
                return ["\(first)", ServerLimitsTests.outcome { try extra.request("GET", "/healthz") }]
            }
            #expect(outcome[1] == "closed")
            let daemonLines = server.logSink.lines.filter { $0.contains("msg=http.daemon") }
            #expect(daemonLines.count == 1, "\(server.logSink.lines)")
            #expect(daemonLines.first?.contains("level=warning") == true)
            #expect(daemonLines.first?.contains("message=") == true)
        }
    }
}
