import EngageAPI
import EngageCore
import Foundation
import HTTPServer
import Testing
import TestSupport

/// Per-key rate limits on a live server. The limiter's clock is moved by hand, so every
/// Retry-After is exact and nothing depends on how fast the machine is; one test waits in real time.
@Suite("Rate limits", .serialized)
struct RateLimitTests {
    static let rateLimited = Problem("rate-limited", status: 429, title: "This key is over its request rate",
                                     detail: "a key may make 1 request(s) per second, 3 at once; retry after the number of seconds in Retry-After")

    @Test(.timeLimit(.minutes(2)))
    func aBurstOverTheLimitGets429AndNothingOfItIsStored() async throws {
        let clock = ManualTime()
        try await TestServer.withServer(configure: clock.limiting(RateLimit(requests: 1, burst: 3))) { server in
            let app = uniqueApp("limited")
            let key = try await server.key(app: app)
            let sameAppKey = try await server.key(app: app)
            let otherAppKey = try await server.key(app: uniqueApp("other"))

            for _ in 0..<3 {
                try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
            }
            let refused = WireEvent.valid(5)
            try expectProblem(try await server.post(refused.array, key: key), Self.rateLimited, retryAfter: "1")
            clock.advance(by: .milliseconds(600))
            // 400 ms to the next token: Retry-After rounds up to whole seconds.
            try expectProblem(try await server.post(refused.array, key: key), Self.rateLimited, retryAfter: "1")
            #expect(try await server.storedCount(ids: refused.ids) == 0)
            #expect(try await server.storedCount(app: app) == 3)

            // Other keys, of the same app or another, have buckets of their own.
            try expectAccepted(try await server.post(WireEvent.valid(2).array, key: sameAppKey), Acceptance(accepted: 2))
            try expectAccepted(try await server.post(WireEvent.valid(2).array, key: otherAppKey), Acceptance(accepted: 2))

            clock.advance(by: .milliseconds(400))
            try expectAccepted(try await server.post(refused.array, key: key), Acceptance(accepted: 5))
            try expectProblem(try await server.post(WireEvent.valid(1).array, key: key), Self.rateLimited, retryAfter: "1")
            #expect(try await server.storedCount(app: app) == 3 + 5 + 2)

            // A quiet key refills to its burst and no further.
            clock.advance(by: .seconds(60))
            for _ in 0..<3 {
                try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
            }
            try expectProblem(try await server.post(WireEvent.valid(1).array, key: key), Self.rateLimited, retryAfter: "1")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func everyAuthenticatedRouteIsLimitedAndTheOthersAreNot() async throws {
        let clock = ManualTime()
        try await TestServer.withServer(configure: clock.limiting(RateLimit(requests: 1, burst: 3))) { server in
            let fixture = try await Fixture(server: server)
            let admin = try #require(fixture.keys[.admin])
            // The fixture's experiments, made before the admin key's bucket is emptied.
            var requests: [(route: String, target: String, body: String)] = []
            for route in PermissionTests.apiRoutes(server.engage.routes) {
                let access = try #require(PermissionTests.table[PermissionTests.name(route)])
                clock.advance(by: .seconds(60))
                let (target, body) = try await access.request(fixture)
                requests.append((PermissionTests.name(route), target, body))
            }
            clock.advance(by: .seconds(60))
            for _ in 0..<3 {
                #expect(try await server.request("GET", "/v1/experiments", headers: [("Authorization", "Bearer \(admin)")]).status == 200)
            }
            for (route, target, body) in requests {
                let method = String(route.prefix { $0 != " " })
                let response = try await server.request(method, target, headers: [
                    ("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json"),
                ], body: Array(body.utf8))
                let needsNoKey = PermissionTests.table[route]?.roles == nil
                #expect(response.status == (needsNoKey ? 200 : 429), "\(route): \(response.text.prefix(200))")
                if !needsNoKey {
                    #expect(response.headers["Retry-After"] == "1", "\(route)")
                }
            }
            // Refused requests changed nothing: the draft experiment of the start route is still a draft.
            #expect(try await server.count("SELECT count(*) FROM experiments WHERE app_id = \(fixture.app) AND status = 'draft'") == 2)
            // Failing keys never reach the limiter: a wrong key is still told so.
            let unknown = try await server.post(WireEvent.valid(1).array, key: fixture.keys[.unknown]!)
            #expect(unknown.status == 401)
        }
    }

    /// The production clock: after waiting the Retry-After it gave, the key is let through again.
    @Test(.timeLimit(.minutes(2)))
    func afterWaitingRetryAfterTheKeyIsAcceptedAgain() async throws {
        // One token every 2 s, two at once: requests sent one after another soon empty the bucket
        // (however slow the machine, each takes a token and at most one comes back per 2 s).
        try await TestServer.withServer(configure: { $0.rateLimit = RateLimit(requests: 30, per: .seconds(60), burst: 2) }) { server in
            let key = try await server.key(app: uniqueApp("limited"))
            var refused = try await server.post(WireEvent.valid(1).array, key: key)
            for _ in 0..<20 where refused.status == 200 {
                refused = try await server.post(WireEvent.valid(1).array, key: key)
            }
            #expect(refused.status == 429)
            let seconds = try #require(refused.headers["Retry-After"].flatMap { Int($0) })
            #expect((1...2).contains(seconds))
            try await Task.sleep(for: .seconds(seconds))
            try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
        }
    }
}

extension ManualTime {
    /// Configures a server to limit keys to `limit` on this time.
    func limiting(_ limit: RateLimit) -> (inout EngageServer.Configuration) -> Void {
        { configuration in
            configuration.rateLimit = limit
            configuration.time = self
        }
    }
}
