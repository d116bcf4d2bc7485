import EngageAPI
import Foundation
import HTTPServer
import Postgres
import Synchronization
import Testing
import TestSupport

/// A corpus of bad requests sent to one live server, one after another. Every case names the exact
/// status, the problem type and a fragment of the detail (or, for a request whose every event is
/// refused, of the one rejection); after every case the number of stored events is unchanged and a
/// valid request still succeeds.
@Suite("Hostile input", .serialized)
struct HostileInputTests {
    @Test func corpus() async throws {
        let server = try HostileServer.get()
        let key = try await server.key(app: uniqueApp("hostile"))
        for hostile in HostileCase.corpus {
            try await check(hostile, server: server, key: key)
        }
    }

    /// A client that trickles a request a byte at a time does not hold up anyone else: between
    /// its bytes, with its request unfinished, other clients' requests are answered.
    @Test(.timeLimit(.minutes(1)))
    func tricklingClientDoesNotHoldUpOthers() async throws {
        let server = try HostileServer.get()
        let key = try await server.key(app: uniqueApp("hostile"))
        let trickler = try RawHTTPClient(port: server.port)
        let request = Array("POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n[".utf8)
        // A few bytes never fill a loopback socket's buffer: sending them does not block.
        for byte in request.prefix(10) {
            try trickler.send([byte])
            try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
        }
        // The rest of the header and the first byte of a body that never comes: still unfinished.
        try trickler.send(Array(request.dropFirst(10)))
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
        withExtendedLifetime(trickler) {}
    }

    /// The same trickle is cut off once the request timeout passes (`--request-timeout`, here
    /// shortened), while another client is served.
    @Test func tricklingClientIsCutOff() async throws {
        try await TestServer.withServer(configure: { $0.http.requestTimeout = .milliseconds(600) }) { server in
            let key = try await server.key(app: uniqueApp("hostile"))
            let port = server.port
            // Sending it all would take about 17 s; the server's 0.6 s request timeout must close
            // the connection long before the last byte (no clock is asserted: bytes are counted).
            let request = Array("POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n".utf8)
                + [UInt8](repeating: 0x20, count: 500)
            let sentSoFar = SentBytes()
            async let trickle: (cutOff: Bool, sent: Int) = offPool {
                let client = try RawHTTPClient(port: port)
                var sent = 0
                for byte in request {
                    do { try client.send([byte]) } catch { return (true, sent) }
                    sent += 1
                    sentSoFar.count.store(sent, ordering: .relaxed)
                    Thread.sleep(forTimeInterval: 0.03)
                    if sent == request.count / 2 { break }
                }
                return (client.waitForClose(), sent)
            }
            // Another client is served while the trickle is under way.
            try await waitUntil("the trickle has begun") { sentSoFar.count.load(ordering: .relaxed) > 0 }
            try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
            let result = try await trickle
            #expect(result.cutOff)
            #expect(result.sent < request.count / 2, "the server let a trickling client send half its request")
            #expect(server.engage.server.statistics.requestsTimedOut == 1)
        }
    }

    // MARK: Checking one case

    private func check(_ hostile: HostileCase, server: TestServer, key: String) async throws {
        let location = SourceLocation(fileID: #fileID, filePath: #filePath, line: hostile.line, column: 1)
        let before = try await server.storedEvents()
        let response = try await hostile.send(to: server.port, key: key)
        let comment = Comment(rawValue: "\(hostile.name): \(response.map { "\($0.status) \($0.text.prefix(400))" } ?? "connection closed")")
        if let response {
            #expect(response.status != 500, comment, sourceLocation: location)
        }

        var stored = 0
        switch hostile.outcome {
        case .problem(let status, let slug, let fragment):
            let response = try #require(response, comment, sourceLocation: location)
            try expectProblem(response, status: status, slug: slug, fragment: fragment, comment, location)
        case .rejected(let field, let fragment):
            let response = try #require(response, comment, sourceLocation: location)
            let problem = try expectProblem(response, status: 400, slug: "no-valid-events",
                                            fragment: "1 event(s) rejected; see rejected", comment, location)
            let rejected = try #require(problem.rejected, comment, sourceLocation: location)
            #expect(rejected.count == 1, comment, sourceLocation: location)
            #expect(rejected.first?.index == 0, comment, sourceLocation: location)
            #expect(rejected.first?.field == field, comment, sourceLocation: location)
            #expect(rejected.first?.problem.contains(fragment) == true, comment, sourceLocation: location)
        case .accepted(let count):
            let response = try #require(response, comment, sourceLocation: location)
            try expectAccepted(response, Acceptance(accepted: count), sourceLocation: location)
            stored = count
        case .refused:
            // Broken framing: libmicrohttpd's plain 400, a 400 problem from the route for what it
            // made of the request, or the connection closed.
            if let response {
                #expect(response.status == 400, comment, sourceLocation: location)
            }
        }

        let after = try await server.storedEvents()
        #expect(after == before + stored, comment, sourceLocation: location)
        // The server keeps serving.
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1),
                           sourceLocation: location)
        #expect(try await server.storedEvents() == after + 1, comment, sourceLocation: location)
    }

    @discardableResult
    private func expectProblem(_ response: RawHTTPClient.Response, status: Int, slug: String, fragment: String,
                               _ comment: Comment, _ location: SourceLocation) throws -> Problem {
        #expect(response.status == status, comment, sourceLocation: location)
        #expect(response.headers["Content-Type"] == "application/problem+json", comment, sourceLocation: location)
        let problem = try JSONDecoder().decode(Problem.self, from: Data(response.body))
        #expect(problem.type == "https://engage.dev/problems/" + slug, comment, sourceLocation: location)
        #expect(problem.status == status, comment, sourceLocation: location)
        #expect(problem.detail.contains(fragment), comment, sourceLocation: location)
        return problem
    }
}

// MARK: - The corpus

/// One bad (or awkward) request and what engage must answer.
struct HostileCase: Sendable {
    enum Body: Sendable {
        /// A file under `Corpus/`; `{{ID}}` becomes a fresh event id and `{{NOW}}` the current time.
        case file(String)
        case generated(@Sendable () -> [UInt8])
    }

    enum Request: Sendable {
        /// `POST /v1/events` with `Authorization` and these headers, the body with Content-Length.
        case post(headers: [(String, String)], Body)
        /// `POST /v1/events` with `Transfer-Encoding: chunked`, in chunks of `chunkSize` bytes.
        case chunked(Body, chunkSize: Int)
        /// These exact bytes on a fresh connection; `{{KEY}}` becomes the API key.
        case raw(String)
        /// A request head only (the body is never sent): for limits refused before the body.
        case head([(String, String)])
    }

    enum Outcome: Sendable {
        /// A problem document for the whole request.
        case problem(status: Int, slug: String, detail: String)
        /// 400 no-valid-events with exactly one rejection, of event 0.
        case rejected(field: String?, problem: String)
        /// 200, with this many events stored.
        case accepted(Int)
        /// Broken HTTP framing: 400 or the connection closed, never anything else.
        case refused
    }

    var name: String
    var request: Request
    var outcome: Outcome
    var line: Int

    init(_ name: String, _ request: Request, _ outcome: Outcome, line: Int = #line) {
        self.name = name
        self.request = request
        self.outcome = outcome
        self.line = line
    }

    static let json = [("Content-Type", "application/json")]
    static let limit = IngestRoute.Configuration().maxDecompressedBytes
    /// HTTPServer's own body limit as EngageServer sets it.
    static let transportLimit = limit + 64 * 1024

    static func post(_ file: String, contentType: String = "application/json") -> Request {
        .post(headers: [("Content-Type", contentType)], .file(file))
    }

    static func malformed(_ fragment: String) -> Outcome {
        .problem(status: 400, slug: "malformed-json", detail: fragment)
    }

    static let uuidProblem = "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"
    static let integerProblem = "must be an integer from 0 to 9007199254740992"

    static let corpus: [HostileCase] = [
        // Not JSON.
        HostileCase("missing comma", post("malformed-missing-comma.json"), malformed("expected ',' or ']' but found character '{' at byte 9")),
        HostileCase("truncated after an event", post("truncated-array.json"), malformed("unexpected end of input")),
        HostileCase("truncated inside a string", post("truncated-in-string.json"), malformed("unexpected end of input")),
        HostileCase("10,000 open brackets", .post(headers: json, .generated { Array(String(repeating: "[", count: 10_000).utf8) }),
                    malformed("nesting deeper than 4098 levels at byte 4098")),
        HostileCase("10,000 open braces", .post(headers: json, .generated { Array(String(repeating: #"{"a":"#, count: 10_000).utf8) }),
                    malformed("nesting deeper than 4098 levels")),
        HostileCase("invalid UTF-8 in a string", post("invalid-utf8-in-string.json"), malformed("invalid UTF-8")),
        HostileCase("overlong UTF-8 in a string", post("overlong-utf8-in-string.json"), malformed("invalid UTF-8")),
        HostileCase("raw NUL in a string", post("raw-nul-in-string.json"), malformed("control character 0x00 in string must be escaped")),
        HostileCase("raw NUL between values", post("raw-nul-between-values.json"), malformed("byte 0x00")),
        HostileCase("escaped NUL", post("escaped-nul.json"), malformed(#"\u0000 is not allowed"#)),
        HostileCase("duplicate key", post("duplicate-key.json"), malformed(#"duplicate key "type""#)),
        HostileCase("duplicate key spelled with an escape", post("duplicate-key-escaped.json"), malformed(#"duplicate key "type""#)),
        HostileCase("empty body", post("empty.json"), malformed("unexpected end of input at byte 0")),
        // One mark before the body is ignored (RFC 8259 lets a parser); a second is no writer's,
        // and its offset counts the body as sent, the first mark included.
        HostileCase("byte order mark", post("byte-order-mark.json"), .accepted(1)),
        HostileCase("two byte order marks", .post(headers: json, .generated { [0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + Array("[]".utf8) }),
                    malformed("byte 0xEF at byte 3")),
        HostileCase("lone surrogate escape", post("lone-surrogate.json"), malformed(#"lone surrogate in \u escape"#)),
        HostileCase("leading zeros", post("leading-zeros.json"), malformed("leading zeros are not allowed in numbers")),
        HostileCase("NDJSON whose every line is bad", post("ndjson-all-bad.ndjson", contentType: "application/x-ndjson"),
                    .problem(status: 400, slug: "no-valid-events", detail: "2 event(s) rejected")),

        // JSON, but not events.
        HostileCase("1e400 for an integer", post("huge-exponent-integer.json"), .rejected(field: "processing_ms", problem: integerProblem)),
        HostileCase("23-digit integer", post("huge-integer.json"), .rejected(field: "processing_ms", problem: integerProblem)),
        HostileCase("negative integer", post("negative-integer.json"), .rejected(field: "processing_ms", problem: integerProblem)),
        HostileCase("fraction for an integer", post("fraction-for-integer.json"), .rejected(field: "processing_ms", problem: integerProblem)),
        HostileCase("integer over 2^53", post("integer-over-2-53.json"), .rejected(field: "processing_ms", problem: integerProblem)),
        HostileCase("array for properties", post("array-for-properties.json"), .rejected(field: "properties", problem: "must be an object")),
        HostileCase("escaped C1 control", post("escaped-c1-control.json"),
                    .rejected(field: "device_id", problem: "must not contain control characters")),
        HostileCase("empty device_id", post("empty-device-id.json"), .rejected(field: "device_id", problem: "must be 1 to 200 bytes long")),
        HostileCase("1e400 for a probability", post("huge-exponent-probability.json"),
                    .rejected(field: "experiment.probability", problem: "must be a number greater than 0 and at most 1")),
        HostileCase("string for processing_ms", post("string-for-integer.json"), .rejected(field: "processing_ms", problem: integerProblem)),
        HostileCase("object for category", post("object-for-category.json"), .rejected(field: "category", problem: "must be a string")),
        HostileCase("missing outcome", post("missing-outcome.json"), .rejected(field: "outcome", problem: "is required")),
        HostileCase("missing event_id", post("missing-event-id.json"), .rejected(field: "event_id", problem: "is required")),
        HostileCase("missing occurred_at", post("missing-occurred-at.json"), .rejected(field: "occurred_at", problem: "is required")),
        HostileCase("event over 8 KiB", .post(headers: json, .generated { oversizedEvent() }),
                    .rejected(field: nil, problem: "; the limit is 8192")),
        HostileCase("event nested 33 levels", .post(headers: json, .generated { deepEvent(levels: 32) }),
                    .rejected(field: nil, problem: "nesting deeper than 32 levels")),
        HostileCase("word for a UUID", post("uuid-word.json"), .rejected(field: "event_id", problem: uuidProblem)),
        HostileCase("UUID one digit short", post("uuid-short.json"), .rejected(field: "event_id", problem: uuidProblem)),
        HostileCase("UUID with a non-hex digit", post("uuid-non-hex.json"), .rejected(field: "event_id", problem: uuidProblem)),
        HostileCase("UUID in braces", post("uuid-braced.json"), .rejected(field: "event_id", problem: uuidProblem)),
        HostileCase("number for a UUID", post("uuid-number.json"), .rejected(field: "event_id", problem: uuidProblem)),
        HostileCase("occurred at the epoch", post("occurred-epoch.json"),
                    .rejected(field: "occurred_at", problem: "in the past; the limit is 30 days")),
        HostileCase("occurred in year 1", post("occurred-year-one.json"),
                    .rejected(field: "occurred_at", problem: "in the past; the limit is 30 days")),
        HostileCase("occurs in year 9999", post("occurred-year-9999.json"),
                    .rejected(field: "occurred_at", problem: "in the future; the limit is 10 minutes")),
        // 9999-12-31T23:59:59-23:59 is 10000-01-01 in UTC, past the last representable year.
        HostileCase("offset pushing past year 9999", post("occurred-extreme-offset.json"),
                    .rejected(field: "occurred_at", problem: "must be an RFC 3339 timestamp with a time zone")),
        HostileCase("impossible date", post("occurred-impossible-date.json"),
                    .rejected(field: "occurred_at", problem: "must be an RFC 3339 timestamp with a time zone")),
        HostileCase("unknown type", post("unknown-type.json"),
                    .rejected(field: "type", problem: "must be one of sent, delivered, displayed, expanded, action")),
        HostileCase("type in the wrong case", post("unknown-type-case.json"),
                    .rejected(field: "type", problem: "must be one of sent, delivered, displayed, expanded, action")),
        HostileCase("unknown event field", post("unknown-event-field.json"), .rejected(field: "user_email", problem: "unknown field")),
        HostileCase("unknown top-level key", post("unknown-top-level-key.json"),
                    .problem(status: 400, slug: "wrong-shape", detail: #"unknown top-level key "app_id""#)),
        HostileCase("a bare event object", post("bare-event-object.json"),
                    .problem(status: 400, slug: "wrong-shape", detail: #"unknown top-level key "event_id""#)),

        // Framing and headers.
        HostileCase("text/plain", post("valid-one.json", contentType: "text/plain"),
                    .problem(status: 415, slug: "unsupported-media-type", detail: "send Content-Type: application/json")),
        HostileCase("no Content-Type", .post(headers: [], .file("valid-one.json")),
                    .problem(status: 415, slug: "unsupported-media-type", detail: "send Content-Type: application/json")),
        HostileCase("Content-Encoding br", .post(headers: json + [("Content-Encoding", "br")], .file("valid-one.json")),
                    .problem(status: 415, slug: "unsupported-media-type", detail: "Content-Encoding br is not supported; use gzip")),
        HostileCase("gzip header on a plain body", .post(headers: json + [("Content-Encoding", "gzip")], .file("valid-one.json")),
                    .problem(status: 400, slug: "bad-gzip", detail: "the gzip body is corrupt or truncated")),
        HostileCase("gzip bomb", .post(headers: json + [("Content-Encoding", "gzip")], .generated {
            Gzip.deflate([UInt8](repeating: 0x20, count: 32 * 1024 * 1024))
        }), .problem(status: 413, slug: "payload-too-large", detail: "the body decompresses to more than \(limit) bytes")),
        HostileCase("body one byte over 1 MiB", .post(headers: json, .generated { paddedBody(limit + 1) }),
                    .problem(status: 413, slug: "payload-too-large", detail: "the body is \(limit + 1) bytes; the limit is \(limit)")),
        HostileCase("Content-Length of 2 MiB", .head(json + [("Content-Length", "2097152")]),
                    .problem(status: 413, slug: "payload-too-large", detail: "The request body exceeds \(transportLimit) bytes.")),
        HostileCase("chunked, valid", .chunked(.file("valid-one.json"), chunkSize: 7), .accepted(1)),
        HostileCase("chunked, over the limit", .chunked(.generated { paddedBody(transportLimit + 1) }, chunkSize: 32 * 1024),
                    .problem(status: 413, slug: "payload-too-large", detail: "The request body exceeds \(transportLimit) bytes.")),
        HostileCase("17 KB header", .head(json + [("Content-Length", "0"), ("X-Padding", String(repeating: "p", count: 17_000))]),
                    .problem(status: 431, slug: "headers-too-large", detail: "The request headers exceed 16384 bytes.")),
        HostileCase("NDJSON line over 8 KiB", .post(headers: [("Content-Type", "application/x-ndjson")], .generated {
            Array((WireEvent.displayed(extra: #","properties":{"pad":"\#(String(repeating: "x", count: 9000))"}"#).json + "\n").utf8)
        }), .rejected(field: nil, problem: "; the limit is 8192")),
        HostileCase("NDJSON line of 5,000 brackets", .post(headers: [("Content-Type", "application/x-ndjson")],
                                                          .generated { Array((String(repeating: "[", count: 5_000) + "\n").utf8) }),
                    .rejected(field: nil, problem: "nesting deeper than 33 levels")),
        HostileCase("two different Content-Lengths",
                    .raw("POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {{KEY}}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n[]"),
                    .refused),
        HostileCase("chunked and Content-Length",
                    .raw("POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {{KEY}}\r\nContent-Type: application/json\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n"),
                    .refused),
        HostileCase("bad chunk size",
                    .raw("POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {{KEY}}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n[]\r\n0\r\n\r\n"),
                    .refused),
        HostileCase("NUL in a header value",
                    .raw("POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {{KEY}}\u{0}x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]"),
                    .refused),
        HostileCase("percent-encoded NUL in the path",
                    .raw("POST /v1/events%00 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
                    .problem(status: 404, slug: "not-found", detail: "No resource at /v1/events")),
        HostileCase("unknown method",
                    .raw("BREW /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
                    .problem(status: 405, slug: "method-not-allowed", detail: "BREW is not allowed here")),
        HostileCase("garbage request line", .raw("GARBAGE\r\n\r\n"), .refused),
        HostileCase("request line without a version", .raw("POST /v1/events\r\nHost: x\r\n\r\n"), .refused),
        HostileCase("header without a colon",
                    .raw("POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {{KEY}}\r\nNoColonHere\r\nContent-Length: 2\r\n\r\n[]"),
                    .refused),
        HostileCase("non-numeric Content-Length",
                    .raw("POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {{KEY}}\r\nContent-Type: application/json\r\nContent-Length: lots\r\n\r\n[]"),
                    .refused),
    ]

    // MARK: Generated bodies

    /// A `displayed` event whose properties make it larger than 8 KiB.
    static func oversizedEvent() -> [UInt8] {
        let event = WireEvent.displayed(extra: #","properties":{"pad":"\#(String(repeating: "x", count: 9000))"}"#)
        return Array("[\(event.json)]".utf8)
    }

    /// A `displayed` event (level 1) whose properties are `levels` nested objects.
    static func deepEvent(levels: Int) -> [UInt8] {
        let nested = String(repeating: #"{"a":"#, count: levels) + "1" + String(repeating: "}", count: levels)
        return Array("[\(WireEvent.displayed(extra: #","properties":\#(nested)"#).json)]".utf8)
    }

    /// One valid event padded with spaces to `size` bytes.
    static func paddedBody(_ size: Int) -> [UInt8] {
        let array = Array([WireEvent.displayed()].array.utf8)
        return array + [UInt8](repeating: 0x20, count: size - array.count)
    }

    // MARK: Sending

    /// The response, or nil when the server closed the connection without one.
    func send(to port: Int, key: String) async throws -> RawHTTPClient.Response? {
        let bytes = try requestBytes(key: key)
        return try await offPool {
            let client = try RawHTTPClient(port: port)
            do {
                try client.send(bytes)
                return try client.readResponse()
            } catch RawHTTPClient.Failure.closed {
                return nil
            } catch RawHTTPClient.Failure.send(let error) where error == EPIPE || error == ECONNRESET {
                // The server answered and closed before taking the whole body: read what it said.
                return try? client.readResponse()
            }
        }
    }

    private func requestBytes(key: String) throws -> [UInt8] {
        let start = "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n"
        switch request {
        case .post(let headers, let body):
            let content = try body.bytes()
            let head = start + headers.map { "\($0): \($1)\r\n" }.joined() + "Content-Length: \(content.count)\r\n\r\n"
            return Array(head.utf8) + content
        case .chunked(let body, let size):
            let content = try body.bytes()
            var bytes = Array((start + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").utf8)
            var offset = 0
            while offset < content.count {
                let chunk = content[offset..<min(offset + size, content.count)]
                bytes += Array("\(String(chunk.count, radix: 16))\r\n".utf8) + chunk + Array("\r\n".utf8)
                offset += chunk.count
            }
            return bytes + Array("0\r\n\r\n".utf8)
        case .raw(let text):
            return Array(text.replacingOccurrences(of: "{{KEY}}", with: key).utf8)
        case .head(let headers):
            return Array((start + headers.map { "\($0): \($1)\r\n" }.joined() + "\r\n").utf8)
        }
    }
}

extension HostileCase.Body {
    static let corpusDirectory = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "Corpus")

    func bytes() throws -> [UInt8] {
        switch self {
        case .generated(let make):
            return make()
        case .file(let name):
            let raw = Array(try Data(contentsOf: Self.corpusDirectory.appending(path: name)))
            return raw
                .replacing(Array("{{ID}}".utf8), with: Array(UUID().uuidString.lowercased().utf8))
                .replacing(Array("{{NOW}}".utf8), with: Array(WireEvent.timestamp(ago: 0).utf8))
        }
    }
}

extension [UInt8] {
    /// Byte-wise replacement, so that files holding invalid UTF-8 survive it.
    fileprivate func replacing(_ target: [UInt8], with replacement: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        var i = 0
        while i < count {
            if i + target.count <= count && self[i..<i + target.count].elementsEqual(target) {
                result += replacement
                i += target.count
            } else {
                result.append(self[i])
                i += 1
            }
        }
        return result
    }
}

// MARK: - Support

/// The one server the hostile corpus runs against, with a database of its own so that the whole
/// `events` table can be counted.
enum HostileServer {
    private static let instance = Result { try TestServer() }

    static func get() throws -> TestServer { try instance.get() }
}

extension TestServer {
    /// Every row of `events`.
    func storedEvents() async throws -> Int {
        try await count("SELECT count(*) FROM events")
    }
}

/// A flag set once, read from another thread.
