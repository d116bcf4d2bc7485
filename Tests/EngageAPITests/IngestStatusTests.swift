import EngageAPI
import Foundation
import HTTPServer
import Testing
import TestSupport

/// The statuses of `POST /v1/events` whose point is what PostgreSQL then holds, on one shared
/// server. Every answer the route decides by itself is also checked without a database, both
/// ways a request can go: IngestRouteTests.
@Suite("POST /v1/events statuses")
struct IngestStatusTests {
    // MARK: 200

    @Test func partialAcceptanceStoresTheValidEventsAndListsEachRejection() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let batch = PartlyValidBatch()
        try expectAccepted(try await server.post(batch.body, key: key), PartlyValidBatch.answer)
        #expect(try await server.storedIDs(app: app) == Set(batch.valid.ids))
    }

    // MARK: 400

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

    // MARK: 401

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

    /// The key cache's lifetime runs on the server's time, moved here by hand.
    @Test(.timeLimit(.minutes(1)))
    func keyRevokedByAnotherInstanceIs401OnceTheCacheExpires() async throws {
        let time = ManualTime()
        try await TestServer.withServer(configure: {
            $0.time = time
            $0.keyCacheLifetime = .seconds(5)
        }) { server in
            let app = uniqueApp()
            let issued = try await server.keys.create(app: app, role: .ingest)
            try expectAccepted(try await server.post(WireEvent.valid(1).array, key: issued.secret), Acceptance(accepted: 1))
            // Another instance (or `engage keys revoke`) writes the row; this server's cache is untouched.
            let changed = try await server.pool.withConnection { [keyID = issued.key.keyID] connection in
                try connection.execute("UPDATE api_keys SET revoked_at = now() WHERE key_id = \(keyID)")
            }
            #expect(changed == 1)
            time.advance(by: .milliseconds(4_999))
            try expectAccepted(try await server.post(WireEvent.valid(1).array, key: issued.secret), Acceptance(accepted: 1))
            time.advance(by: .milliseconds(1))
            try expectProblem(try await server.post(WireEvent.valid(1).array, key: issued.secret), .unauthorized("the key is unknown or revoked"))
            #expect(try await server.storedCount(app: app) == 2)
        }
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

}
