import EngageAPI
import Foundation
import HTTPServer
import Testing
import TestSupport

/// Every status `POST /v1/events` answers with that needs no special server, on one shared server.
@Suite("POST /v1/events statuses")
struct IngestStatusTests {
    // MARK: 200

    @Test func partialAcceptanceStoresTheValidEventsAndListsEachRejection() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let valid = WireEvent.valid(3)
        let body = "[" + [
            valid[0].json,
            WireEvent.displayed(extra: #","app_id":"someone-else""#).json,
            valid[1].json,
            #"{"event_id":"nope","type":"expanded"}"#,
            WireEvent.displayed(age: 45 * 86_400 + 60).json,
            valid[2].json,
            #"{"event_id":"\#(UUID().uuidString)","type":"opened"}"#,
            "17",
        ].joined(separator: ",") + "]"

        let response = try await server.post(body, key: key)

        try expectAccepted(response, Acceptance(accepted: 3, rejected: [
            RejectedEvent(1, "app_id", "unknown field"),
            RejectedEvent(3, "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
            RejectedEvent(4, "occurred_at", "is 45 days in the past; the limit is 30 days"),
            RejectedEvent(6, "type", "must be one of sent, delivered, displayed, expanded, action"),
            RejectedEvent(7, nil, "must be a JSON object"),
        ]))
        #expect(try await server.storedIDs(app: app) == Set(valid.ids))
    }

    // MARK: 400

    @Test func malformedJSONIsRefusedWithTheByteOffset() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp())
        let response = try await server.post(#"[{"a":1} {"b":2}]"#, key: key)
        try expectProblem(response, Problem(
            "malformed-json", status: 400, title: "The body is not valid JSON",
            detail: "expected ',' or ']' but found character '{' at byte 9", offset: 9))
    }

    @Test func truncatedBodyIsMalformedAtItsEndAndStoresNothing() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let events = WireEvent.valid(2)
        let body = String(events.array.dropLast())
        let response = try await server.post(body, key: key)
        try expectProblem(response, Problem(
            "malformed-json", status: 400, title: "The body is not valid JSON",
            detail: "unexpected end of input at byte \(body.utf8.count)", offset: body.utf8.count))
        #expect(try await server.storedCount(ids: events.ids) == 0)
    }

    @Test(arguments: [
        (#"{"data":[]}"#, "wrong-shape", #"unknown top-level key "data"; expected only "events""#),
        (#"{"events":[],"app_id":"x"}"#, "wrong-shape", #"unknown top-level key "app_id"; expected only "events""#),
        ("{}", "wrong-shape", #"the object has no "events" array"#),
        (#"{"events":{}}"#, "wrong-shape", #""events" must be an array"#),
        (#""events""#, "wrong-shape", #"the body must be an array of events or an object with an "events" array"#),
        ("null", "wrong-shape", #"the body must be an array of events or an object with an "events" array"#),
        ("[]", "empty", "the request holds no events"),
        (#"{"events":[]}"#, "empty", "the request holds no events"),
    ])
    func wrongShapeIsRefusedWhole(body: String, slug: String, detail: String) async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp())
        try expectProblem(try await server.post(body, key: key), .badRequest(slug, detail))
    }

    @Test func emptyNDJSONHoldsNoEvents() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp())
        let response = try await server.post("\n  \r\n\t\n", key: key, contentType: "application/x-ndjson")
        try expectProblem(response, .badRequest("empty", "the request holds no events"))
    }

    @Test func requestWithNoValidEventIsRefusedWithEveryRejection() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let body = "[" + [
            #"{"event_id":"nope"}"#,
            WireEvent.displayed(extra: #","app_id":"x""#).json,
            #"{"event_id":"\#(UUID().uuidString)","type":"displayed","notification_id":"n","device_id":"d","category":"c","occurred_at":"\#(WireEvent.timestamp(ago: 0))","presentation":"fancy","attachment_kind":"image"}"#,
        ].joined(separator: ",") + "]"

        let response = try await server.post(body, key: key)

        try expectProblem(response, Problem(
            "no-valid-events", status: 400, title: "No event in the request is valid",
            detail: "3 event(s) rejected; see rejected",
            rejected: [
                RejectedEvent(0, "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
                RejectedEvent(1, "app_id", "unknown field"),
                RejectedEvent(2, "presentation", "must be one of rich, plain"),
            ]))
        #expect(try await server.storedCount(app: app) == 0)
    }

    @Test func corruptGzipIsABadRequest() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp())
        var gzip = Gzip.deflate(Array(WireEvent.valid(3).array.utf8))
        gzip.removeLast(12)
        let response = try await server.request("POST", "/v1/events", headers: [
            ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
        ], body: gzip)
        try expectProblem(response, .badRequest("bad-gzip", "the gzip body is corrupt or truncated"))
    }

    // MARK: 401

    @Test func missingAuthorizationIs401() async throws {
        let server = try SharedServer.get()
        let response = try await server.request("POST", "/v1/events", headers: [("Content-Type", "application/json")],
                                                body: Array(WireEvent.valid(1).array.utf8))
        try expectProblem(response, .unauthorized("send the key as Authorization: Bearer <key>"))
        #expect(response.headers["WWW-Authenticate"] == "Bearer")
    }

    /// `{key}` stands for a real, active key: the scheme alone makes these fail.
    @Test(arguments: ["Basic ZWdrOnNlY3JldA==", "Bearer", "Token {key}", "Bearer{key}", "{key}"])
    func otherSchemesAre401(authorization: String) async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let response = try await server.request("POST", "/v1/events", headers: [
            ("Authorization", authorization.replacingOccurrences(of: "{key}", with: key)), ("Content-Type", "application/json"),
        ], body: Array(WireEvent.valid(1).array.utf8))
        try expectProblem(response, .unauthorized("the Authorization header must be: Bearer <key>"))
        #expect(response.headers["WWW-Authenticate"] == "Bearer")
        #expect(try await server.storedCount(app: app) == 0)
    }

    @Test func unknownKeysAre401() async throws {
        let server = try SharedServer.get()
        let real = try await server.key(app: uniqueApp())
        let keyID = real.dropFirst(4).prefix(8)
        let candidates = [
            "egk_ffffffff_" + String(repeating: "ab", count: 20),
            "egk_\(keyID)_" + String(repeating: "0", count: 40),
            String(real.dropLast()),
            real + "0",
            "not-a-key",
        ]
        for candidate in candidates {
            let response = try await server.post(WireEvent.valid(1).array, key: candidate)
            try expectProblem(response, .unauthorized("the key is unknown or revoked"))
            #expect(response.headers["WWW-Authenticate"] == "Bearer")
        }
    }

    @Test func revokedKeyIs401AtOnce() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let issued = try await server.keys.create(app: app, role: .ingest)
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: issued.secret), Acceptance(accepted: 1))
        #expect(try await server.keys.revoke(keyID: issued.key.keyID))
        let events = WireEvent.valid(2)
        try expectProblem(try await server.post(events.array, key: issued.secret), .unauthorized("the key is unknown or revoked"))
        #expect(try await server.storedCount(app: app) == 1)
    }

    @Test func keyRevokedByAnotherInstanceIs401OnceTheCacheExpires() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let issued = try await server.keys.create(app: app, role: .ingest)
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: issued.secret), Acceptance(accepted: 1))
        // Another instance (or `engage keys revoke`) writes the row; this server's cache is untouched.
        let changed = try await server.pool.withConnection { [keyID = issued.key.keyID] connection in
            try connection.execute("UPDATE api_keys SET revoked_at = now() WHERE key_id = \(keyID)")
        }
        #expect(changed == 1)
        try await Task.sleep(for: SharedServer.keyCacheLifetime * 2)
        try expectProblem(try await server.post(WireEvent.valid(1).array, key: issued.secret), .unauthorized("the key is unknown or revoked"))
        #expect(try await server.storedCount(app: app) == 1)
    }

    // MARK: 403

    @Test func readKeyMayNotSendEvents() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app, role: .read)
        let response = try await server.post(WireEvent.valid(2).array, key: key)
        try expectProblem(response, Problem("forbidden", status: 403, title: "This key may not do that",
                                            detail: "a read key cannot send events"))
        #expect(try await server.storedCount(app: app) == 0)
    }

    @Test func adminKeyMaySendEvents() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app, role: .admin)
        try expectAccepted(try await server.post(WireEvent.valid(2).array, key: key), Acceptance(accepted: 2))
        #expect(try await server.storedCount(app: app) == 2)
    }

    // MARK: 413

    @Test func moreThanTheMaximumNumberOfEventsIs413() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let events = WireEvent.valid(1001)
        try expectProblem(try await server.post(events.array, key: key),
                          .tooLarge("the request holds 1001 events; the limit is 1000"))
        try expectProblem(try await server.post(events.ndjson, key: key, contentType: "application/x-ndjson"),
                          .tooLarge("the request holds 1001 events; the limit is 1000"))
        #expect(try await server.storedCount(app: app) == 0)
        // Exactly the limit is fine.
        try expectAccepted(try await server.post(Array(events.prefix(1000)).array, key: key), Acceptance(accepted: 1000))
    }

    @Test func bodyOverTheDecompressedLimitIs413() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let limit = IngestRoute.Configuration().maxDecompressedBytes
        let events = WireEvent.valid(2)
        // Valid JSON padded with whitespace to one byte over the limit.
        let array = events.array
        let body = array + String(repeating: " ", count: limit + 1 - array.utf8.count)

        try expectProblem(try await server.post(body, key: key), .tooLarge("the body is \(limit + 1) bytes; the limit is \(limit)"))
        try expectProblem(try await server.postGzip(body, key: key), .tooLarge("the body decompresses to more than \(limit) bytes"))
        #expect(try await server.storedCount(app: app) == 0)
        // One byte less is accepted, plain and gzipped.
        try expectAccepted(try await server.post(String(body.dropLast()), key: key), Acceptance(accepted: 2))
        try expectAccepted(try await server.postGzip(String(body.dropLast()), key: key), Acceptance(duplicates: 2))
    }

    @Test func gzipBombIs413() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp())
        let bomb = Gzip.deflate([UInt8](repeating: 0, count: 20 * 1024 * 1024))
        #expect(bomb.count < 100 * 1024)
        let response = try await server.request("POST", "/v1/events", headers: [
            ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
        ], body: bomb)
        try expectProblem(response, .tooLarge("the body decompresses to more than \(IngestRoute.Configuration().maxDecompressedBytes) bytes"))
    }

    // MARK: 415

    @Test(arguments: ["text/plain", "application/xml", "multipart/form-data; boundary=x", "json"])
    func wrongContentTypeIs415(contentType: String) async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp())
        try expectProblem(try await server.post(WireEvent.valid(1).array, key: key, contentType: contentType),
                          .unsupportedMediaType(Problem.contentTypeDetail))
    }

    @Test func missingContentTypeIs415() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp())
        let response = try await server.request("POST", "/v1/events", headers: [("Authorization", "Bearer \(key)")],
                                                body: Array(WireEvent.valid(1).array.utf8))
        try expectProblem(response, .unsupportedMediaType(Problem.contentTypeDetail))
    }

    @Test(arguments: ["br", "deflate", "compress", "gzip, br"])
    func unsupportedContentEncodingIs415(encoding: String) async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp())
        let response = try await server.post(WireEvent.valid(1).array, key: key, extraHeaders: [("Content-Encoding", encoding)])
        try expectProblem(response, .unsupportedMediaType("Content-Encoding \(encoding) is not supported; use gzip"))
    }
}
