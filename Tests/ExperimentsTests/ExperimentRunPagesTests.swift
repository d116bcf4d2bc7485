import EngageAPI
import EngageCore
import Foundation
import Postgres
import Testing
import TestSupport

/// `GET /v1/experiments/{id}/runs` pages through every run, newest first: an hourly experiment
/// has more than one page of runs after four days.
@Suite("Experiment runs, page by page")
struct ExperimentRunPagesTests {
    @Test func everyRunIsOnExactlyOnePageNewestFirst() async throws {
        let server = try TestServer()
        do {
            let admin = try await server.key(role: .admin)
            let auth = ExperimentAPITests.auth(admin)
            let created = try await server.request("POST", "/v1/experiments", headers: auth + [("Content-Type", "application/json")],
                                                   body: Array(ExperimentAPITests.definition.utf8))
            #expect(created.status == 201, "\(created.text)")
            let experiment = "strategy-full-vs-adaptive"
            // 205 runs: hourly ones, and manual ones between some of them.
            try await server.pool.withConnection { connection in
                _ = try connection.execute("""
                    INSERT INTO experiment_runs (experiment_id, scheduled_for, manual, status)
                    SELECT \(experiment), timestamptz '2026-11-01 00:00Z' + (i % 190) * interval '1 hour' + (i / 190) * interval '30 minutes', i >= 190, 'done'
                    FROM generate_series(0, 204) i
                    """)
            }
            let expected = try await server.pool.withConnection { connection in
                try connection.query("""
                    SELECT id::text FROM experiment_runs WHERE experiment_id = \(experiment) ORDER BY scheduled_for DESC
                    """).rows.map { try $0.decode(0, as: String.self) }
            }
            #expect(expected.count == 205)
            var seen: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let path = "/v1/experiments/\(experiment)/runs" + (cursor.map { "?before=\($0)" } ?? "")
                let page = try await server.request("GET", path, headers: auth)
                #expect(page.status == 200, "\(page.text)")
                let object = try #require(try JSONSerialization.jsonObject(with: Data(page.text.utf8)) as? [String: Any])
                let runs = try #require(object["runs"] as? [[String: Any]])
                seen += runs.compactMap { ($0["id"] as? NSNumber).map { "\($0.int64Value)" } ?? $0["id"] as? String }
                cursor = object["next"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages == 3)
            #expect(seen == expected)

            // The key is checked before the query, as on every route.
            #expect(try await server.request("GET", "/v1/experiments/\(experiment)/runs?before=abc").status == 401)
            for (query, detail) in [("before=abc", "before must be a run id"), ("before=0", "before must be a run id"),
                                    ("before=%2B5", "before must be a run id"), ("before=05", "before must be a run id"),
                                    ("limit=5", "unknown query parameter limit"), ("before=1&before=2", "query parameter before is given twice")] {
                let refused = try await server.request("GET", "/v1/experiments/\(experiment)/runs?\(query)", headers: auth)
                #expect(refused.status == 400, "\(query)")
                #expect(refused.text.contains(detail), "\(query): \(refused.text)")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
