import EngageAPI
import Foundation
import Testing
import TestSupport

/// Small requests whose key is cached are handled on the HTTP thread that read them
/// (`IngestRoute.handleInline`); everything a client sees must be the same as through a task.
@Suite("Ingestion on the HTTP thread")
struct IngestInlineTests {
    struct Exchange: Equatable, CustomStringConvertible {
        var status: Int
        var contentType: String?
        var retryAfter: String?
        var body: String
        var description: String { "\(status) \(contentType ?? "-") \(body)" }
    }

    /// The same sequence of requests, with fresh event ids, against one server.
    static func scenario(_ server: TestServer) async throws -> [Exchange] {
        let key = try await server.key(app: uniqueApp("inline"))
        // The first request fills the key cache (the only one that must take a task).
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
        let partial = "[" + WireEvent.valid(3).map(\.json).joined(separator: ",") + #",{"event_id":"nope"}]"#
        let secretPart = key.split(separator: "_").last!
        let forged = key.dropLast(secretPart.count) + String(repeating: "0", count: secretPart.count)
        var responses: [RawHTTPClient.Response] = []
        responses.append(try await server.post(partial, key: key))
        responses.append(try await server.post(partial, key: key))
        responses.append(try await server.post(#"[{"event_id":"nope"}]"#, key: key))
        responses.append(try await server.post(WireEvent.valid(1).array, key: key, contentType: "text/plain"))
        responses.append(try await server.post(#"[{"event_id": tru]"#, key: key))
        responses.append(try await server.post(WireEvent.valid(1).array, key: String(forged)))
        responses.append(try await server.post(WireEvent.valid(2).ndjson, key: key, contentType: "application/x-ndjson"))
        return responses.map {
            Exchange(status: $0.status, contentType: $0.headers["Content-Type"], retryAfter: $0.headers["Retry-After"], body: $0.text)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func inlineAnswersAreTheAnswersOfATask() async throws {
        // A key cache that keeps nothing: every request takes the task.
        let taskOnly = try TestServer { $0.keyCacheLifetime = .zero }
        let inline = try TestServer { $0.keyCacheLifetime = .seconds(120) }
        let throughTasks = try await Self.scenario(taskOnly)
        let throughThread = try await Self.scenario(inline)
        #expect(throughThread == throughTasks)
        #expect(throughThread.map(\.status) == [200, 200, 400, 415, 400, 401, 200])
        #expect(taskOnly.engage.server.statistics.requestsTakenInline == 0)
        // The forged key, cached as refused, is refused before its body is read: not inline.
        #expect(inline.engage.server.statistics.requestsTakenInline == 6)
        for server in [taskOnly, inline] {
            #expect(try await server.count("SELECT count(*) FROM events") == 6)
        }
        let metrics = metricSamples(try await inline.request("GET", "/metrics").text)
        #expect(metrics["engage_http_requests_inline_total"] == "6")
        #expect(metrics[#"engage_http_requests_total{route="/v1/events",status="200"}"#] == "4")
        await taskOnly.stop()
        await inline.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func largeOrCompressedBodiesTakeATaskEvenWithACachedKey() async throws {
        let server = try TestServer { $0.keyCacheLifetime = .seconds(120) }
        let key = try await server.key(app: uniqueApp("large"))
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
        let events = (0..<400).map { _ in WireEvent.displayed() }
        #expect(events.array.utf8.count > IngestRoute.inlineBodyLimit)
        try expectAccepted(try await server.post(events.array, key: key), Acceptance(accepted: 400))
        #expect(server.engage.server.statistics.requestsTakenInline == 0)
        // A small gzip body may inflate to far more than it looks: a task too.
        try expectAccepted(try await server.postGzip(WireEvent.valid(2).array, key: key), Acceptance(accepted: 2))
        #expect(server.engage.server.statistics.requestsTakenInline == 0)
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
        #expect(server.engage.server.statistics.requestsTakenInline == 1)
        await server.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func aReadKeyIsRefusedTheSameWayBothTimes() async throws {
        let server = try TestServer { $0.keyCacheLifetime = .seconds(120) }
        let key = try await server.key(app: uniqueApp("reader"), role: .read)
        let first = try await server.post(WireEvent.valid(1).array, key: key)
        let second = try await server.post(WireEvent.valid(1).array, key: key)
        #expect(first.status == 403)
        #expect(second.status == 403)
        #expect(second.text == first.text)
        // The second time the key is cached: refused before the body, which is never read.
        #expect(server.engage.server.statistics.requestsTakenInline == 0)
        #expect(try await server.count("SELECT count(*) FROM events") == 0)
        await server.stop()
    }
}
