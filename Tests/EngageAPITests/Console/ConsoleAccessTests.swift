import EngageAPI
import EngageCore
import Foundation
import HTTPServer
import Testing
import TestSupport

/// Who may see and change what in the console, decided before anything is read: the server here
/// has no database, so a request that gets past the checks finds none (503). ConsoleExperimentTests
/// checks the same decisions end to end with PostgreSQL.
@Suite("Console access without a database")
struct ConsoleAccessTests {
    /// Every console route and what it answers a browser holding no key.
    static let withoutKey: [String: Int] = [
        "GET /": 401, "GET /console": 401, "GET /console/": 401, "GET /console/report": 401, "GET /console/extension": 401,
        "GET /console/experiments": 401, "GET /console/experiments/:id": 401, "POST /console/experiments/:id/start": 401,
        "POST /console/experiments/:id/stop": 401, "GET /console/ingestion": 401,
        // The form itself, a form sent without its token, and signing out with nothing to forget.
        "GET /console/login": 200, "POST /console/login": 403, "POST /console/logout": 303,
    ]

    @Test func everyPageWithoutAKeyAnswers401WithTheSignInFormAndNoData() async throws {
        try await RouteTestServer.withServer { server in
            let console = server.routes.filter(EngageAPI.isConsole)
            #expect(Set(console.map(PermissionTests.name)) == Set(Self.withoutKey.keys))
            let templates = Set(console.map { $0.pattern.replacingOccurrences(of: ":id", with: "{id}") })
            #expect(templates == ConsoleRoutes.routes)
            let client = ConsoleClient(server: server)
            for route in console {
                let name = PermissionTests.name(route)
                let target = RouteAccessTests.target(route)
                let response = route.method == .GET ? try await client.get(target) : try await client.post(target, [("csrf", "x")])
                let expected = try #require(Self.withoutKey[name])
                switch expected {
                case 401:
                    ConsoleClient.expectSignInForm(response, name)
                    #expect(response.headers["WWW-Authenticate"]?.hasPrefix("Cookie realm=\"engage console\"") == true, "\(name)")
                    // The form comes with its double-submit cookie, and brings the browser back here.
                    let login = try #require(ConsoleClient.setCookies(response)["engage_console_login"], "\(name)")
                    #expect(login.hasSuffix("; Path=/; HttpOnly; SameSite=Strict"), "\(login)")
                    #expect(ConsoleClient.formToken(response) == ConsoleClient.value(login))
                    if route.method == .GET {
                        #expect(response.text.contains(#"name="next" value="\#(target)""#), "\(name)")
                    }
                case 200, 403:
                    ConsoleClient.expectSignInForm(response, status: expected, name)
                default:
                    #expect(response.status == 303)
                    #expect(response.headers["Location"] == "/console/login")
                }
            }
            #expect(server.events.storedIDs.isEmpty)
        }
    }

    @Test func anUnknownRevokedOrIngestKeyIsRefusedAndForgotten() async throws {
        try await RouteTestServer.withServer { server in
            let revoked = server.keys.issue(app: "app-1", role: .read)
            server.keys.revoke(revoked)
            let cases = [
                "egk_0badc0de_" + String(repeating: "ab", count: 20), revoked, server.keys.issue(app: "app-1", role: .ingest), "not-a-key",
            ]
            for key in cases {
                let response = try await ConsoleClient(server: server, keys: [key]).get("/console/report")
                ConsoleClient.expectSignInForm(response, key)
                #expect(response.text.contains("The key kept in this browser is unknown, revoked or not a read or admin key"))
                let removal = ConsoleClient.setCookies(response)["engage_console"]
                #expect(removal == "engage_console=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
            }
            // A good key beside a bad one: the page is served, and the cookie sent again without the bad one.
            let read = server.keys.issue(app: "app-1", role: .read)
            let mixed = try await ConsoleClient(server: server, keys: [revoked, read]).get("/console/ingestion")
            #expect(mixed.status == 200, "\(mixed.text.prefix(300))")
            #expect(ConsoleClient.value(ConsoleClient.setCookies(mixed)["engage_console"]) == read)
        }
    }

    @Test func signingInKeepsTheKeyInAnHttpOnlyStrictCookieAndReturns() async throws {
        try await RouteTestServer.withServer { server in
            let read = server.keys.issue(app: "app-1", role: .read)
            let client = ConsoleClient(server: server)
            let form = try await client.get("/console/login?next=%2Fconsole%2Fexperiments")
            #expect(form.status == 200)
            let loginCookie = try #require(ConsoleClient.value(ConsoleClient.setCookies(form)["engage_console_login"]))
            let token = try #require(ConsoleClient.formToken(form))
            #expect(token == loginCookie && token.count == 32)
            #expect(form.text.contains(#"name="next" value="/console/experiments""#))

            // Spaces and a CRLF line ending around the pasted key are dropped ("\r\n" is one Character).
            let signedIn = try await client.post("/console/login", [("key", " \(read)\r\n"), ("next", "/console/experiments"), ("csrf", token)],
                                                 extraCookies: ["engage_console_login=\(loginCookie)"])
            #expect(signedIn.status == 303, "\(signedIn.text.prefix(200))")
            #expect(signedIn.headers["Location"] == "/console/experiments?app=app-1")
            let cookies = ConsoleClient.setCookies(signedIn)
            #expect(cookies["engage_console"] == "engage_console=\(read); Path=/; Max-Age=604800; HttpOnly; SameSite=Strict")
            #expect(cookies["engage_console_login"] == "engage_console_login=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
            ConsoleClient.expectSecured(signedIn)

            // Without the form's token, or with another one, nothing is kept.
            for (cookie, sent) in [(loginCookie, ""), (loginCookie, String(repeating: "0", count: 32)), ("", loginCookie)] {
                let refused = try await client.post("/console/login", [("key", read), ("csrf", sent)],
                                                    extraCookies: cookie.isEmpty ? [] : ["engage_console_login=\(cookie)"])
                ConsoleClient.expectSignInForm(refused, status: 403, "token \(sent)")
                #expect(refused.text.contains("The sign-in form had expired or came from another page"))
                #expect(ConsoleClient.setCookies(refused)["engage_console"] == nil)
            }
            // Keys that cannot read, and a way out of the site.
            let answers: [(String, Int, String)] = [
                ("egk_0badc0de_" + String(repeating: "ab", count: 20), 401, "That key is unknown or revoked."),
                (server.keys.issue(app: "app-1", role: .ingest), 403, "An ingest key cannot read reports"),
                ("nonsense; Path=/", 401, "That is not an engage API key"),
            ]
            for (key, status, message) in answers {
                let refused = try await client.post("/console/login", [("key", key), ("csrf", token)],
                                                    extraCookies: ["engage_console_login=\(loginCookie)"])
                ConsoleClient.expectSignInForm(refused, status: status, key)
                #expect(refused.text.contains(message), "\(key)")
                // A 401 names how to authenticate (RFC 9110), as every other 401 of the console.
                #expect((refused.headers["WWW-Authenticate"]?.hasPrefix("Cookie realm=\"engage console\"") == true) == (status == 401), "\(key)")
                #expect(ConsoleClient.setCookies(refused)["engage_console"] == nil)
            }
            // A page with a query of its own gets the app after it (it got a second '?', which
            // made the filter's value "promo?app=app-1"); one that names its app keeps it.
            for (next, location) in [("/console/report?category=promo", "/console/report?category=promo&app=app-1"),
                                     ("/console/report?category=happ=1", "/console/report?category=happ=1&app=app-1"),
                                     ("/console/report?app=app-2&category=promo", "/console/report?app=app-2&category=promo")] {
                let back = try await client.post("/console/login", [("key", read), ("next", next), ("csrf", token)],
                                                 extraCookies: ["engage_console_login=\(loginCookie)"])
                #expect(back.headers["Location"] == location, "\(next)")
            }
            for next in ["//evil.example/x", "https://evil.example/", "/console/../v1/report", "/\\evil.example"] {
                let away = try await client.post("/console/login", [("key", read), ("next", next), ("csrf", token)],
                                                 extraCookies: ["engage_console_login=\(loginCookie)"])
                #expect(away.headers["Location"] == "/console/report?app=app-1", "\(next)")
            }
        }
    }

    @Test func changesNeedTheSessionsFormTokenAndAnAdminKey() async throws {
        try await RouteTestServer.withServer { server in
            let reader = ConsoleClient(server: server, keys: [server.keys.issue(app: "app-1", role: .read)])
            let admin = ConsoleClient(server: server, keys: [server.keys.issue(app: "app-1", role: .admin)])
            // The ingestion page needs no database; its forms carry the session's token.
            let readerPage = try await reader.get("/console/ingestion")
            #expect(readerPage.status == 200)
            let readerToken = try #require(ConsoleClient.formToken(readerPage))
            let adminToken = try #require(ConsoleClient.formToken(try await admin.get("/console/ingestion")))
            #expect(readerToken.count == 64 && readerToken != adminToken)

            for action in ["start", "stop"] {
                let target = "/console/experiments/exp-1/\(action)?app=app-1"
                for (client, token) in [(reader, ""), (reader, adminToken), (admin, readerToken), (admin, "")] {
                    let refused = try await client.post(target, [("csrf", token)])
                    #expect(refused.status == 403, "\(action) with token \(token.prefix(6))")
                    #expect(refused.text.contains("Nothing was changed"))
                    ConsoleClient.expectSecured(refused)
                }
                let byReader = try await reader.post(target, [("csrf", readerToken)])
                #expect(byReader.status == 403)
                #expect(byReader.text.contains("A read key cannot \(action) experiments"))
                // The admin's request passes every check and reaches the store, which is not there.
                let byAdmin = try await admin.post(target, [("csrf", adminToken)])
                #expect(byAdmin.status == 503, "\(byAdmin.text.prefix(300))")
                #expect(byAdmin.text.contains("The database is unreachable"))
            }
        }
    }

    @Test func signingOutNeedsTheTokenAndRemovesTheCookie() async throws {
        try await RouteTestServer.withServer { server in
            let client = ConsoleClient(server: server, keys: [server.keys.issue(app: "app-1", role: .read)])
            let token = try #require(ConsoleClient.formToken(try await client.get("/console/ingestion")))
            let forged = try await client.post("/console/logout", [("csrf", "forged")])
            #expect(forged.status == 403)
            #expect(ConsoleClient.setCookies(forged)["engage_console"] == nil)
            let out = try await client.post("/console/logout", [("csrf", token)])
            #expect(out.status == 303 && out.headers["Location"] == "/console/login")
            #expect(ConsoleClient.setCookies(out)["engage_console"] == "engage_console=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
        }
    }

    /// Another site's form carries no `SameSite=Strict` cookie: its sign-out removes nothing.
    @Test func aSignOutWithoutTheCookieRemovesNothing() async throws {
        try await RouteTestServer.withServer { server in
            let crossSite = try await ConsoleClient(server: server).post("/console/logout", [("csrf", "")])
            #expect(crossSite.status == 303 && crossSite.headers["Location"] == "/console/login")
            #expect(ConsoleClient.setCookies(crossSite)["engage_console"] == nil)
        }
    }

    /// A revoked key beside a good one, on pages refused without going through the page's own
    /// answer (an app whose key was revoked, a change refused): the sign-out form they show carries
    /// the token of the keys kept, so the cookie is sent again with those keys, and signing out works.
    @Test func signingOutWorksFromARefusalAfterAKeyWasRevoked() async throws {
        try await RouteTestServer.withServer { server in
            let revoked = server.keys.issue(app: "app-a", role: .admin)
            let kept = server.keys.issue(app: "app-b", role: .read)
            server.keys.revoke(revoked)
            for (method, target) in [("GET", "/console/report?app=app-a"), ("POST", "/console/experiments/exp-1/start?app=app-b")] {
                let client = ConsoleClient(server: server, keys: [revoked, kept])
                let refused = method == "GET" ? try await client.get(target) : try await client.post(target, [("csrf", "")])
                #expect(refused.status == 403, "\(target): \(refused.text.prefix(300))")
                #expect(ConsoleClient.value(ConsoleClient.setCookies(refused)["engage_console"]) == kept, "\(target)")
                let token = try #require(ConsoleClient.formToken(refused))
                let out = try await ConsoleClient(server: server, keys: [kept]).post("/console/logout", [("csrf", token)])
                #expect(out.status == 303, "\(target): \(out.text.prefix(300))")
            }
        }
    }

    @Test func pagesNeedingTheDatabaseSayItIsUnreachable() async throws {
        try await RouteTestServer.withServer { server in
            let client = ConsoleClient(server: server, keys: [server.keys.issue(app: "app-1", role: .read)])
            for target in ["/", "/console/report", "/console/extension?category=news", "/console/experiments", "/console/experiments/x"] {
                let response = try await client.get(target)
                #expect(response.status == 503, "\(target)")
                #expect(response.headers["Retry-After"] == "5")
                #expect(response.text.contains("<nav"), "the signed-in reader keeps the navigation")
            }
            let bad = try await client.get("/console/report?since=yesterday")
            #expect(bad.status == 400)
            #expect(bad.text.contains("since must be a date such as 2026-11-29"))
            let grouping = try await client.get("/console/report?by=week")
            #expect(grouping.text.contains("by must be one of category, attachment, day, action"))
            // As GET /v1/report and engage report: since after until is refused, not an empty page.
            for target in ["/console/report?since=2026-11-30&until=2026-11-01", "/console/extension?until=2026-11-01&since=2026-11-30"] {
                let reversed = try await client.get(target)
                #expect(reversed.status == 400, "\(target)")
                #expect(reversed.text.contains("since 2026-11-30 is after until 2026-11-01: no day lies between them"), "\(target)")
            }
        }
    }

    @Test func keysOfSeveralAppsLetTheReaderChooseAndNoOtherApp() async throws {
        try await RouteTestServer.withServer { server in
            let client = ConsoleClient(server: server, keys: [server.keys.issue(app: "app-b", role: .read),
                                                              server.keys.issue(app: "app-a", role: .admin)])
            let page = try await client.get("/console/ingestion")
            #expect(page.status == 200)
            #expect(page.text.contains(#"<option value="app-a" selected>app-a</option><option value="app-b">app-b</option>"#))
            #expect(page.text.contains("admin key"))
            let other = try await client.get("/console/ingestion?app=app-b")
            #expect(other.text.contains(#"<option value="app-b" selected>"#))
            #expect(other.text.contains("read key"))
            let stranger = try await client.get("/console/ingestion?app=app-c")
            #expect(stranger.status == 403)
            #expect(stranger.text.contains("This browser holds no key of app app-c"))
        }
    }

    @Test func consoleKeysAreRateLimitedLikeTheAPIs() async throws {
        let clock = ManualTime()
        try await RouteTestServer.withServer(configure: clock.limiting(RateLimit(requests: 1, burst: 1))) { server in
            let client = ConsoleClient(server: server, keys: [server.keys.issue(app: "app-1", role: .read)])
            #expect(try await client.get("/console/ingestion").status == 200)
            let limited = try await client.get("/console/ingestion")
            #expect(limited.status == 429)
            #expect(limited.headers["Retry-After"] == "1")
            #expect(limited.text.contains("This key is over its request rate"))
        }
    }

    /// A page takes a token from the key of the app it shows, not from every key the browser holds:
    /// another app's key, over its rate from its use elsewhere, does not refuse it.
    @Test func aPageChargesOnlyTheKeyOfTheAppItShows() async throws {
        let clock = ManualTime()
        try await RouteTestServer.withServer(configure: clock.limiting(RateLimit(requests: 1, burst: 1))) { server in
            let busy = server.keys.issue(app: "app-a", role: .read)
            let client = ConsoleClient(server: server, keys: [busy, server.keys.issue(app: "app-b", role: .read)])
            // app-a's key spends its token on the API.
            _ = try await server.request("GET", "/v1/report", headers: [("Authorization", "Bearer \(busy)")])
            for _ in 0..<3 {
                #expect(try await client.get("/console/ingestion?app=app-b").status == 200)
                clock.advance(by: .seconds(1))
            }
            let limited = try await client.get("/console/ingestion?app=app-a")
            #expect(limited.status == 200, "a second on, app-a's key has a token again")
            #expect(try await client.get("/console/ingestion?app=app-a").status == 429)
            #expect(try await client.get("/console/ingestion?app=app-b").status == 200)
        }
    }

    /// `--console off`: no page, and the API as before.
    @Test func theConsoleCanBeLeftOut() async throws {
        try await RouteTestServer.withServer(configure: { $0.console = false }) { server in
            #expect(!server.routes.contains(where: EngageAPI.isConsole))
            for target in ["/", "/console/", "/console/report", "/console/login"] {
                let response = try await server.request("GET", target)
                #expect(response.status == 404, "\(target)")
                #expect(response.headers["Content-Type"] == "application/problem+json")
            }
            #expect(try await server.request("GET", "/healthz").status == 200)
        }
    }

    /// Under TLS every cookie the console sets is `Secure`.
    @Test(.timeLimit(.minutes(2)))
    func cookiesAreSecureUnderTLS() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let leaf = try authority.issue("console")
        let credentials = try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: leaf.keyFile)
        try await RouteTestServer.withServer(configure: { $0.http.tls = credentials }) { server in
            let headers = authority.directory + "/console-headers.txt"
            let answer = try await curlHTTPS(port: server.port, path: "/console/report", caFile: authority.certificateFile,
                                             extra: ["-D", headers])
            #expect(answer.output == "401")
            let text = try String(contentsOfFile: headers, encoding: .utf8)
            #expect(text.contains("Set-Cookie: engage_console_login="))
            #expect(text.contains("; Path=/; HttpOnly; Secure; SameSite=Strict"), "\(text)")
        }
    }
}
