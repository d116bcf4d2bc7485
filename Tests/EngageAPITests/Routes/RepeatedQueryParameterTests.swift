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

    /// The experiment routes take no query parameter: one is refused, not ignored (a
    /// `start?dry_run=1` started the experiment), and nothing changes.
    @Test(.timeLimit(.minutes(2)))
    func theExperimentRoutesRefuseAnyQueryParameter() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp("no-query")
        let admin = [("Authorization", "Bearer \(try await server.key(app: app, role: .admin))")]
        let id = Fixture.newExperimentID()
        let json = [("Content-Type", "application/json")]
        let definition = Array(Fixture.definition(id: id, app: app).utf8)
        for (method, path, body) in [("GET", "/v1/experiments?status=running", [UInt8]()), ("POST", "/v1/experiments?dry_run=1", definition)] {
            let response = try await server.request(method, path, headers: admin + json, body: body)
            #expect(response.status == 400 && response.text.contains("this route takes none"), "\(path): \(response.text)")
        }
        #expect(try await server.count("SELECT count(*) FROM experiments WHERE id = \(id)") == 0)
        #expect(try await server.request("POST", "/v1/experiments", headers: admin + json, body: definition).status == 201)
        for (method, path) in [("GET", "/v1/experiments/\(id)?format=json"), ("POST", "/v1/experiments/\(id)/start?dry_run=1"),
                               ("POST", "/v1/experiments/\(id)/stop?reason=x"), ("POST", "/v1/experiments/\(id)/run?full=1"),
                               ("GET", "/v1/experiments/\(id)/history?limit=1")] {
            let response = try await server.request(method, path, headers: admin)
            let name = String(path.split(separator: "?")[1].prefix { $0 != "=" })
            try expectProblem(response, .badRequest("bad-query", "unknown query parameter \(name); this route takes none"))
        }
        #expect(try await server.count("SELECT count(*) FROM experiments WHERE id = \(id) AND status = 'draft'") == 1)
        #expect(try await server.count("SELECT count(*) FROM experiment_runs WHERE experiment_id = \(id)") == 0)
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
