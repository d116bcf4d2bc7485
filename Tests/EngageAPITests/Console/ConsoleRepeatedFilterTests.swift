import Foundation
import Testing
import TestSupport

/// The console's report filters refuse a filter given twice, naming it, as the API's routes do
/// (400 `bad-query` there; the console's own problem page here), instead of using one of them.
@Suite("Console: a filter given twice")
struct ConsoleRepeatedFilterTests {
    @Test func aFilterGivenTwiceIsRefusedNamingIt() async throws {
        try await RouteTestServer.withServer { server in
            let client = ConsoleClient(server: server, keys: [server.keys.issue(app: "app-1", role: .read)])
            for (target, name) in [("/console/report?since=2026-11-01&since=2026-11-20", "since"),
                                   ("/console/report?by=day&until=2026-11-20&by=action", "by"),
                                   ("/console/extension?category=a&category=b", "category")] {
                let response = try await client.get(target)
                #expect(response.status == 400, "\(target)")
                #expect(response.text.contains("query parameter \(name) is given twice; give it once"), "\(target)")
            }
        }
    }
}
