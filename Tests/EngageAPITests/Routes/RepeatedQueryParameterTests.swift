import Foundation
import Testing
import TestSupport

/// A query parameter given twice is refused (400 `bad-query` naming it) on every route that
/// reads query parameters, instead of one of the two values being used without a word.
@Suite("Query parameters given twice")
struct RepeatedQueryParameterTests {
    @Test(arguments: [
        ("/v1/report?since=2026-11-01&since=2026-11-20", "since"),
        ("/v1/report?until=2026-11-20&category=new_photo&until=2026-11-21", "until"),
        ("/v1/report?by=day&by=day", "by"),
        ("/v1/report?category=a&category=b", "category"),
        ("/v1/assignments?device_id=d-1&device_id=d-2", "device_id"),
        ("/v1/assignments?device_id=d-1&category=a&category=a", "category"),
        ("/v1/simulate?strategy=full&strategy=none", "strategy"),
        ("/v1/simulate?strategy=full&since=7d&since=1d", "since"),
    ])
    func aParameterGivenTwiceIsRefused(path: String, name: String) async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp(), role: .read)
        let response = try await server.request("GET", path, headers: [("Authorization", "Bearer \(key)")])
        try expectProblem(response, .badRequest("bad-query", "query parameter \(name) is given twice; give it once"))
    }

    /// A misspelt `category` on `/v1/assignments` answered every experiment of the app, those
    /// that do not take the category too: refused, as on the report and simulate routes.
    @Test(arguments: ["categories=new_photo", "Category=new_photo", "catgory=new_photo"])
    func anUnknownAssignmentsParameterIsRefused(parameter: String) async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp(), role: .ingest)
        let response = try await server.request("GET", "/v1/assignments?device_id=d-1&" + parameter,
                                                headers: [("Authorization", "Bearer \(key)")])
        let name = String(parameter.prefix { $0 != "=" })
        try expectProblem(response, .badRequest("bad-query", "unknown query parameter \(name); use device_id or category"))
    }

    /// Simulate's `category` is documented as repeatable (each one a category to count).
    @Test func simulatesCategoryMayRepeat() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp(), role: .read)
        let response = try await server.request("GET", "/v1/simulate?strategy=full&category=a&category=b",
                                                headers: [("Authorization", "Bearer \(key)")])
        #expect(response.status == 200, "\(response.text)")
    }
}
