import EngageAPI
import EngageCore
import Foundation
import HTTPServer
import Testing
import TestSupport

/// engage answers every client over real sockets: one that half-closes after its request (`nc -N`,
/// some proxies and load balancers), and one that sends its whole body without waiting for
/// `100-continue` (URLSession) to a request refused before its body is read. (A full queue's 429
/// to such a client: IngestLifecycleTests.)
@Suite("Every client answered", .serialized, .timeLimit(.minutes(2)))
struct EveryClientAnsweredTests {
    /// Larger than any socket buffer on the way, so that the client is still writing when the
    /// refusal comes; within the body limit configured below.
    static let bodyBytes = 6 << 20

    static func configure(_ configuration: inout EngageServer.Configuration) {
        configuration.ingest.maxDecompressedBytes = 8 << 20
        configuration.http.maxHeaderBytes = 4096
    }

    /// Sends `head` and `body` in full, then reads the answer, then waits for the server to close.
    static func sendWholeThenRead(port: Int, head: String, body: [UInt8]) async throws -> (RawHTTPClient.Response, Bool) {
        try await offPool { try RawHTTPClient(port: port).sendWholeThenRead(Array(head.utf8) + body) }
    }

    /// Sends the request, shuts the sending side, reads the answer and waits for the close.
    static func halfClosed(port: Int, head: String, body: String = "") async throws -> (RawHTTPClient.Response, Bool) {
        try await offPool {
            let client = try RawHTTPClient(port: port)
            try client.send(head + body)
            client.finishSending()
            let response = try client.readResponse()
            return (response, client.waitForClose())
        }
    }

    @Test func halfClosedClientsGetTheirWholeAnswer() async throws {
        try await TestServer.withServer(configure: Self.configure) { server in
            let app = uniqueApp("half-closed")
            let key = try await server.key(app: app)
            let (health, healthClosed) = try await Self.halfClosed(port: server.port, head: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(health.status == 200)
            #expect(healthClosed)

            let events = WireEvent.valid(3)
            let body = events.array
            let (ingest, ingestClosed) = try await Self.halfClosed(
                port: server.port,
                head: "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n",
                body: body)
            try expectAccepted(ingest, Acceptance(accepted: 3))
            #expect(ingestClosed)
            #expect(try await server.storedIDs(app: app) == Set(events.ids))

            let (refused, refusedClosed) = try await Self.halfClosed(
                port: server.port, head: "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n", body: body)
            try expectProblem(refused, .unauthorized("send the key as Authorization: Bearer <key>"))
            #expect(refusedClosed)
        }
    }

    @Test func refusalsBeforeTheBodyAreReadByClientsThatSendItAll() async throws {
        try await TestServer.withServer(configure: {
            Self.configure(&$0)
            $0.rateLimit = RateLimit(requests: 1, per: .seconds(60), burst: 1)
        }) { server in
            let port = server.port
            let app = uniqueApp("early")
            let key = try await server.key(app: app)
            let padding = String(repeating: " ", count: Self.bodyBytes - 2)
            let big = Array(("[" + padding + "]").utf8)
            func head(_ headers: String, length: Int = Self.bodyBytes) -> String {
                "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(headers)Content-Length: \(length)\r\n\r\n"
            }

            let (missingKey, closed401) = try await Self.sendWholeThenRead(port: port, head: head(""), body: big)
            try expectProblem(missingKey, .unauthorized("send the key as Authorization: Bearer <key>"))
            #expect(missingKey.headers["WWW-Authenticate"] == "Bearer")
            #expect(closed401)

            let (malformed, _) = try await Self.sendWholeThenRead(port: port, head: head("Authorization: Basic abc\r\n"), body: big)
            try expectProblem(malformed, .unauthorized("the Authorization header must be: Bearer <key>"))

            let tooLarge = 9 << 20
            let (oversized, closed413) = try await Self.sendWholeThenRead(
                port: port, head: head("Authorization: Bearer \(key)\r\n", length: tooLarge), body: [UInt8](repeating: 0x20, count: tooLarge))
            #expect(oversized.status == 413)
            #expect(closed413)

            let (headers, closed431) = try await Self.sendWholeThenRead(
                port: port, head: head("Authorization: Bearer \(key)\r\nX-Padding: \(String(repeating: "p", count: 5000))\r\n"), body: big)
            #expect(headers.status == 431)
            #expect(headers.text == HTTPProblem.headersTooLarge(limit: 4096).json)
            #expect(closed431)

            // The key's one token goes to an accepted request, which also puts the key in the cache.
            let events = WireEvent.valid(1)
            try expectAccepted(try await server.post(events.array, key: key), Acceptance(accepted: 1))
            let (limited, closed429) = try await Self.sendWholeThenRead(port: port, head: head("Authorization: Bearer \(key)\r\n"), body: big)
            #expect(limited.status == 429)
            #expect(limited.headers["Retry-After"].flatMap { Int($0) } != nil)
            #expect(closed429)

            #expect(try await server.storedIDs(app: app) == Set(events.ids))
            try await waitUntil("every refused socket stopped lingering") { server.engage.server.statistics.connectionsLingering == 0 }
            // Refused before the body and counted like any answer.
            let metrics = metricSamples(server.engage.registry.renderPrometheus())
            #expect(metrics[#"engage_http_requests_total{route="/v1/events",status="401"}"#] == "2")
            #expect(metrics[#"engage_http_requests_total{route="/v1/events",status="429"}"#] == "1")
            // So are the server's own refusals, which never reach a route (they went uncounted).
            #expect(metrics[#"engage_http_requests_total{route="/v1/events",status="413"}"#] == "1")
            #expect(metrics[#"engage_http_requests_total{route="/v1/events",status="431"}"#] == "1")
        }
    }
}
