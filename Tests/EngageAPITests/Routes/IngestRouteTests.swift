import EngageAPI
import EngageCore
import EventStore
import Foundation
import HTTPServer
import Postgres
import Testing
import TestSupport

/// `POST /v1/events` on the real HTTP server with keys and accepted events in memory: every
/// answer the route decides by itself (validation, content types, keys, limits, refusals), with
/// no database. Each test runs both ways a request can go: answered on the HTTP thread (its key
/// known at once) and in a task (the key looked up the way that waits). What reaches PostgreSQL
/// is tested in IngestStatusTests and the suites beside it.
@Suite("POST /v1/events without a database")
struct IngestRouteTests {
    static func withServer(cached: Bool, configure: (inout EngageServer.Configuration) -> Void = { _ in },
                           _ body: (RouteTestServer) async throws -> Void) async throws {
        try await RouteTestServer.withServer(configure: configure) { server in
            server.keys.setCached(cached)
            try await body(server)
        }
    }

    static func ids(_ events: [WireEvent]) -> [EventID] { events.map { EventID($0.id) } }

    // MARK: 200

    @Test(arguments: [true, false])
    func validEventsAreHandedOnAndEachRejectionListed(cached: Bool) async throws {
        try await Self.withServer(cached: cached) { server in
            let key = server.keys.issue(app: "app-1")
            let batch = PartlyValidBatch()
            try expectAccepted(try await server.post(batch.body, key: key), PartlyValidBatch.answer)
            #expect(server.events.storedIDs == Self.ids(batch.valid))
            // The way the request went.
            #expect(server.server.statistics.requestsTakenInline == (cached ? 1 : 0))
        }
    }

    @Test(arguments: [true, false])
    func retriesAndRepeatsAreCountedAsDuplicates(cached: Bool) async throws {
        try await Self.withServer(cached: cached) { server in
            let key = server.keys.issue(app: "app-1")
            let events = WireEvent.valid(2)
            try expectAccepted(try await server.post(events.array, key: key), Acceptance(accepted: 2))
            try expectAccepted(try await server.post(events.ndjson, key: key, contentType: "application/x-ndjson"),
                               Acceptance(duplicates: 2))
            let new = WireEvent.expanded()
            try expectAccepted(try await server.post([new, new, events[0]].array, key: key), Acceptance(accepted: 1, duplicates: 2))
            #expect(server.events.storedIDs == Self.ids(events + [new]))
        }
    }

    /// `occurred_at` is judged by the server's wall clock: the time the test set, not the machine's.
    @Test func occurredAtIsCheckedAgainstTheInjectedWallClock() async throws {
        try await Self.withServer(cached: true) { server in
            let key = server.keys.issue(app: "app-1")
            let event = WireEvent.displayed()
            // A minute more than 31 days: the event's time, in whole seconds, may fall in a later
            // second than the one the server's clock started in.
            server.time.advance(by: .seconds(31 * 86_400 + 60))
            try expectProblem(try await server.post([event].array, key: key), Problem(
                "no-valid-events", status: 400, title: "No event in the request is valid",
                detail: "1 event(s) rejected; see rejected",
                rejected: [RejectedEvent(0, "occurred_at", "is 31 days in the past; the limit is 30 days")]))
            #expect(server.events.storedIDs.isEmpty)
        }
    }

    // MARK: 400

    @Test(arguments: [true, false])
    func malformedAndWronglyShapedBodiesAreRefusedWhole(cached: Bool) async throws {
        try await Self.withServer(cached: cached) { server in
            let key = server.keys.issue(app: "app-1")
            try expectProblem(try await server.post(#"[{"a":1} {"b":2}]"#, key: key), Problem(
                "malformed-json", status: 400, title: "The body is not valid JSON",
                detail: "expected ',' or ']' but found character '{' at byte 9", offset: 9))
            let truncated = String(WireEvent.valid(2).array.dropLast())
            try expectProblem(try await server.post(truncated, key: key), Problem(
                "malformed-json", status: 400, title: "The body is not valid JSON",
                detail: "unexpected end of input at byte \(truncated.utf8.count)", offset: truncated.utf8.count))
            let shapes = [
                (#"{"data":[]}"#, "wrong-shape", #"unknown top-level key "data"; expected only "events""#),
                (#"{"events":[],"app_id":"x"}"#, "wrong-shape", #"unknown top-level key "app_id"; expected only "events""#),
                ("{}", "wrong-shape", #"the object has no "events" array"#),
                (#"{"events":{}}"#, "wrong-shape", #""events" must be an array"#),
                (#""events""#, "wrong-shape", #"the body must be an array of events or an object with an "events" array"#),
                ("null", "wrong-shape", #"the body must be an array of events or an object with an "events" array"#),
                ("[]", "empty", "the request holds no events"),
                (#"{"events":[]}"#, "empty", "the request holds no events"),
            ]
            for (body, slug, detail) in shapes {
                try expectProblem(try await server.post(body, key: key), .badRequest(slug, detail))
            }
            try expectProblem(try await server.post("\n  \r\n\t\n", key: key, contentType: "application/x-ndjson"),
                              .badRequest("empty", "the request holds no events"))
            var gzip = Gzip.deflate(Array(WireEvent.valid(3).array.utf8))
            gzip.removeLast(12)
            try expectProblem(try await server.request("POST", "/v1/events", headers: [
                ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
            ], body: gzip), .badRequest("bad-gzip", "the gzip body is corrupt or truncated"))
            #expect(server.events.storedIDs.isEmpty)
        }
    }

    // MARK: 401 and 403

    @Test(arguments: [true, false])
    func requestsWithoutAUsableKeyAre401(cached: Bool) async throws {
        try await Self.withServer(cached: cached) { server in
            let key = server.keys.issue(app: "app-1")
            let revoked = server.keys.issue(app: "app-1")
            server.keys.revoke(revoked)
            let body = Array(WireEvent.valid(1).array.utf8)
            let missing = try await server.request("POST", "/v1/events", headers: [("Content-Type", "application/json")], body: body)
            try expectProblem(missing, .unauthorized("send the key as Authorization: Bearer <key>"))
            #expect(missing.headers["WWW-Authenticate"] == "Bearer")
            for authorization in ["Basic ZWdrOnNlY3JldA==", "Bearer", "Token \(key)", "Bearer\(key)", key] {
                let response = try await server.request("POST", "/v1/events", headers: [
                    ("Authorization", authorization), ("Content-Type", "application/json"),
                ], body: body)
                try expectProblem(response, .unauthorized("the Authorization header must be: Bearer <key>"))
                #expect(response.headers["WWW-Authenticate"] == "Bearer")
            }
            // Two keys, the first a good one: which the client meant is unknown (the first was taken).
            let twice = try await server.request("POST", "/v1/events", headers: [
                ("Authorization", "Bearer \(key)"), ("Authorization", "Bearer \(revoked)"), ("Content-Type", "application/json"),
            ], body: body)
            try expectProblem(twice, .unauthorized("send one Authorization header, not 2"))
            for candidate in [revoked, "egk_ffffffff_" + String(repeating: "ab", count: 20), String(key.dropLast()), key + "0", "not-a-key"] {
                let response = try await server.post(WireEvent.valid(1).array, key: candidate)
                try expectProblem(response, .unauthorized("the key is unknown or revoked"))
                #expect(response.headers["WWW-Authenticate"] == "Bearer")
            }
            #expect(server.events.storedIDs.isEmpty)
        }
    }

    @Test(arguments: [true, false])
    func onlyIngestAndAdminKeysMaySendEvents(cached: Bool) async throws {
        try await Self.withServer(cached: cached) { server in
            let read = server.keys.issue(app: "app-1", role: .read)
            try expectProblem(try await server.post(WireEvent.valid(2).array, key: read),
                              Problem("forbidden", status: 403, title: "This key may not do that", detail: "a read key cannot send events"))
            #expect(server.events.storedIDs.isEmpty)
            let admin = server.keys.issue(app: "app-1", role: .admin)
            try expectAccepted(try await server.post(WireEvent.valid(2).array, key: admin), Acceptance(accepted: 2))
        }
    }

    // MARK: 413

    @Test(arguments: [true, false])
    func requestsOverTheEventAndByteLimitsAre413(cached: Bool) async throws {
        try await Self.withServer(cached: cached, configure: {
            $0.ingest.limits.maxEvents = 5
            $0.ingest.maxDecompressedBytes = 4096
        }) { server in
            let key = server.keys.issue(app: "app-1")
            let events = WireEvent.valid(6)
            try expectProblem(try await server.post(events.array, key: key), .tooLarge("the request holds 6 events; the limit is 5"))
            try expectProblem(try await server.post(events.ndjson, key: key, contentType: "application/x-ndjson"),
                              .tooLarge("the request holds 6 events; the limit is 5"))
            let array = Array(events.prefix(2)).array
            let padded = array + String(repeating: " ", count: 4097 - array.utf8.count)
            try expectProblem(try await server.post(padded, key: key), .tooLarge("the body is 4097 bytes; the limit is 4096"))
            let gzip = try await server.request("POST", "/v1/events", headers: [
                ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
            ], body: Gzip.deflate(Array(padded.utf8)))
            try expectProblem(gzip, .tooLarge("the body decompresses to more than 4096 bytes"))
            let bomb = try await server.request("POST", "/v1/events", headers: [
                ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
            ], body: Gzip.deflate([UInt8](repeating: 0, count: 1 << 20)))
            try expectProblem(bomb, .tooLarge("the body decompresses to more than 4096 bytes"))
            #expect(server.events.storedIDs.isEmpty)
            // At the limits exactly: stored.
            try expectAccepted(try await server.post(String(padded.dropLast()), key: key), Acceptance(accepted: 2))
            try expectAccepted(try await server.post(Array(events.dropFirst()).array, key: key), Acceptance(accepted: 4, duplicates: 1))
        }
    }

    /// Larger than any gzip body of an allowed size could be: refused by the HTTP server from the
    /// declared length, before the body is sent.
    @Test func aDeclaredBodyOverTheTransportLimitIs413() async throws {
        try await Self.withServer(cached: true, configure: { $0.ingest.maxDecompressedBytes = 4096 }) { server in
            let key = server.keys.issue(app: "app-1")
            let limit = 4096 + 64 * 1024
            let port = server.port
            let response = try await offPool {
                let client = try RawHTTPClient(port: port)
                try client.send("POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\n"
                                + "Content-Type: application/json\r\nContent-Length: \(limit + 1)\r\n\r\n")
                return try client.readResponse()
            }
            #expect(response.status == 413)
            #expect(response.headers["Content-Type"] == "application/problem+json")
            #expect(response.text == HTTPProblem.payloadTooLarge(limit: limit).json)
        }
    }

    // MARK: 415

    @Test(arguments: [true, false])
    func bodiesOfOtherMediaTypesAndEncodingsAre415(cached: Bool) async throws {
        try await Self.withServer(cached: cached) { server in
            let key = server.keys.issue(app: "app-1")
            for contentType in ["text/plain", "application/xml", "multipart/form-data; boundary=x", "json"] {
                try expectProblem(try await server.post(WireEvent.valid(1).array, key: key, contentType: contentType),
                                  .unsupportedMediaType(Problem.contentTypeDetail))
            }
            let missing = try await server.request("POST", "/v1/events", headers: [("Authorization", "Bearer \(key)")],
                                                   body: Array(WireEvent.valid(1).array.utf8))
            try expectProblem(missing, .unsupportedMediaType(Problem.contentTypeDetail))
            for encoding in ["br", "deflate", "compress", "gzip, br"] {
                let response = try await server.post(WireEvent.valid(1).array, key: key, extraHeaders: [("Content-Encoding", encoding)])
                try expectProblem(response, .unsupportedMediaType("Content-Encoding \(encoding) is not supported; use gzip"))
            }
            // Repeated lines are one list (RFC 9110), not the first line alone; a second
            // Content-Type leaves which one was meant unknown.
            let twoCodings = try await server.request("POST", "/v1/events", headers: [
                ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"),
                ("Content-Encoding", "identity"), ("Content-Encoding", "gzip"),
            ], body: Array(WireEvent.valid(1).array.utf8))
            try expectProblem(twoCodings, .unsupportedMediaType("Content-Encoding identity, gzip is not supported; use gzip"))
            let twoTypes = try await server.request("POST", "/v1/events", headers: [
                ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"), ("Content-Type", "application/x-ndjson"),
            ], body: Array(WireEvent.valid(1).array.utf8))
            try expectProblem(twoTypes, .unsupportedMediaType(Problem.contentTypeDetail))
            // Media type parameters and +json types are fine.
            try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key, contentType: "application/vnd.engage+json; charset=utf-8"),
                               Acceptance(accepted: 1))
            #expect(server.events.storedIDs.count == 1)
        }
    }

    // MARK: 429 and 503

    @Test(arguments: [true, false])
    func aKeyOverItsRateIs429UntilTheClockGivesItAToken(cached: Bool) async throws {
        try await Self.withServer(cached: cached, configure: { $0.rateLimit = RateLimit(requests: 1, burst: 2) }) { server in
            let key = server.keys.issue(app: "app-1")
            try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
            try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key), Acceptance(accepted: 1))
            let limited = Problem("rate-limited", status: 429, title: "This key is over its request rate",
                                  detail: "a key may make 1 request(s) per second, 2 at once; retry after the number of seconds in Retry-After")
            let refused = WireEvent.valid(1)
            try expectProblem(try await server.post(refused.array, key: key), limited, retryAfter: "1")
            server.time.advance(by: .milliseconds(999))
            try expectProblem(try await server.post(refused.array, key: key), limited, retryAfter: "1")
            // A key that fails authentication takes no token and is told why.
            try expectProblem(try await server.post(refused.array, key: key + "0"), .unauthorized("the key is unknown or revoked"))
            server.time.advance(by: .milliseconds(1))
            try expectAccepted(try await server.post(refused.array, key: key), Acceptance(accepted: 1))
            #expect(server.events.storedIDs.count == 3)
        }
    }

    @Test(arguments: [true, false])
    func refusalsAndFailuresOfTheEventLogAreProblemsWithRetryAfter(cached: Bool) async throws {
        try await Self.withServer(cached: cached) { server in
            let key = server.keys.issue(app: "app-1")
            let events = WireEvent.valid(2)
            server.events.setFailure(IngestQueue.Refusal.full)
            try expectProblem(try await server.post(events.array, key: key), Problem(
                "ingest-queue-full", status: 429, title: "Too many events are waiting to be stored",
                detail: "retry after the number of seconds in Retry-After"), retryAfter: "1")
            server.events.setFailure(IngestQueue.Refusal.closed)
            try expectProblem(try await server.post(events.array, key: key), Problem(
                "shutting-down", status: 503, title: "The server is shutting down",
                detail: "nothing from this request was stored; retry on another instance or later"), retryAfter: "5")
            // A commit that failed or was cut short (the commit timeout's interruption): the events
            // may be stored on the primary, so the answer does not say they are not.
            for failure: any Error in [CommitFailed(), PostgresError(kind: .interrupted, message: "the commit timeout passed")] {
                server.events.setFailure(failure)
                try expectProblem(try await server.post(events.array, key: key), .eventsNotAcknowledged, retryAfter: "5")
            }
            // A commit the synchronous standbys do not have (StandbyConfirmation): not acknowledged.
            // Its own problem, naming the missing privilege when that is why.
            for (verdict, expected) in [(StandbyConfirmation.Verdict.unconfirmed, Problem.unconfirmedCommit),
                                        (.unverifiable, Problem.unverifiableCommit)] {
                let refusal = #expect(throws: PostgresError.self) { try StandbyConfirmation.requireAcknowledgeable(verdict) }
                #expect(refusal?.kind == .unconfirmedCommit)
                server.events.setFailure(refusal)
                try expectProblem(try await server.post(events.array, key: key), expected, retryAfter: "5")
            }
            #expect(server.events.storedIDs.isEmpty)
            // The retry, once the log takes events again, stores them.
            server.events.setFailure(nil)
            try expectAccepted(try await server.post(events.array, key: key), Acceptance(accepted: 2))
        }
    }

    /// A constraint of the database refusing an event of the request (class 23; the committer
    /// has already stored the rest of its group without it) is no outage: the database answered.
    /// Saying "the event log is unreachable, retry" would send operators to a healthy database.
    @Test(arguments: [true, false])
    func aConstraintsRefusalIsAServerErrorNamingItsSQLState(cached: Bool) async throws {
        try await Self.withServer(cached: cached) { server in
            let key = server.keys.issue(app: "app-1")
            server.events.setFailure(PostgresError(kind: .server, sqlState: "23514", message: "new row violates check constraint"))
            try expectProblem(try await server.post(WireEvent.valid(2).array, key: key), Problem(
                "event-not-storable", status: 500, title: "A constraint of the database refused an event of this request",
                detail: "the request is not acknowledged (SQLSTATE 23514); engage's own schema has no constraint a valid "
                    + "event breaks, so the server's operators must mend the database's; resend later, unchanged (any events of it "
                    + "stored meanwhile are then reported as duplicates)"))
            #expect(server.events.storedIDs.isEmpty)
        }
    }

    @Test func unreachableKeysAre503NotAWrongKey() async throws {
        try await Self.withServer(cached: false) { server in
            let key = server.keys.issue(app: "app-1")
            server.keys.setUnavailable(true)
            try expectProblem(try await server.post(WireEvent.valid(1).array, key: key), .databaseUnavailable, retryAfter: "5")
            #expect(server.events.storedIDs.isEmpty)
        }
    }

    struct CommitFailed: Error {}
}
