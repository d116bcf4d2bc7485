import EngageCore
import Foundation
import Testing
import TestSupport

/// The routes that read a JSON body besides ingestion take it as `application/json` and nothing
/// else: a body labelled as a form, as text, twice, or as gzip is refused (415) before it is read.
@Suite("JSON bodies of the experiment and assignment routes")
struct JSONBodyMediaTypeTests {
    static let refused: [(label: String, headers: [(String, String)])] = [
        ("no Content-Type", []),
        ("text/plain", [("Content-Type", "text/plain")]),
        ("a form", [("Content-Type", "application/x-www-form-urlencoded")]),
        ("two Content-Type lines", [("Content-Type", "application/json"), ("Content-Type", "application/json")]),
        ("gzip", [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]),
        ("identity then gzip", [("Content-Type", "application/json"), ("Content-Encoding", "identity"), ("Content-Encoding", "gzip")]),
    ]

    @Test(.timeLimit(.minutes(2)))
    func aDefinitionNotSentAsJSONIsRefusedAndNothingIsCreated() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp("media")
        let admin = try await server.key(app: app, role: .admin)
        for (label, headers) in Self.refused {
            let id = Fixture.newExperimentID()
            let answer = try await server.request("POST", "/v1/experiments", headers: [("Authorization", "Bearer \(admin)")] + headers,
                                                  body: Array(Fixture.definition(id: id, app: app).utf8))
            #expect(answer.status == 415, "\(label): \(answer.text)")
            #expect(answer.text.contains(#""type":"https://engage.dev/problems/unsupported-media-type""#), "\(label): \(answer.text)")
            #expect(try await server.count("SELECT count(*) FROM experiments WHERE id = \(id)") == 0, "\(label)")
        }
        let id = Fixture.newExperimentID()
        let created = try await server.request("POST", "/v1/experiments",
                                               headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json; charset=utf-8"),
                                                         ("Content-Encoding", "identity")],
                                               body: Array(Fixture.definition(id: id, app: app).utf8))
        #expect(created.status == 201, "\(created.text)")
    }

    @Test(.timeLimit(.minutes(2)))
    func devicesNotSentAsJSONAreRefused() async throws {
        let server = try SharedServer.get()
        let ingest = try await server.key(app: uniqueApp("media-assign"), role: .ingest)
        let body = Array(#"{"device_ids":["d-1"]}"#.utf8)
        for (label, headers) in Self.refused {
            let answer = try await server.request("POST", "/v1/assignments", headers: [("Authorization", "Bearer \(ingest)")] + headers, body: body)
            #expect(answer.status == 415, "\(label): \(answer.text)")
            #expect(answer.text.contains("unsupported-media-type"), "\(label): \(answer.text)")
        }
        let answered = try await server.request("POST", "/v1/assignments",
                                                headers: [("Authorization", "Bearer \(ingest)"), ("Content-Type", "application/json")], body: body)
        #expect(answered.status == 200, "\(answered.text)")
    }
}
