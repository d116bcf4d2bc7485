import EngageAPI
import Foundation
import HTTPServer
import Testing
import TestSupport

/// What ingestion promises beyond status codes: idempotency, body formats, app isolation and
/// all-or-nothing storage of each request's valid events. One shared server.
@Suite("POST /v1/events behaviour")
struct IngestBehaviourTests {
    @Test func retriesOfTheSameBatchAreDuplicatesAndStoredOnce() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let events = WireEvent.valid(3)

        try expectAccepted(try await server.post(events.array, key: key), Acceptance(accepted: 3))
        for _ in 0..<2 {
            try expectAccepted(try await server.post(events.array, key: key), Acceptance(duplicates: 3))
        }
        // A retry that overlaps a new batch: only the new event is stored.
        let next = [events[2], events[0], WireEvent.expanded()]
        try expectAccepted(try await server.post(next.array, key: key), Acceptance(accepted: 1, duplicates: 2))

        #expect(try await server.storedCount(app: app) == 4)
        #expect(try await server.count("SELECT count(DISTINCT event_id) FROM events WHERE app_id = \(app)") == 4)
        #expect(try await server.count("SELECT count(*) FROM events WHERE event_id = ANY(\((events + [next[2]]).ids))") == 4)
    }

    @Test func repeatedEventIDWithinOneRequestIsStoredOnce() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let event = WireEvent.displayed()
        let other = WireEvent.expanded()
        // The second copy differs in type but not in id: the first one wins.
        let copy = WireEvent.expanded(id: event.id)
        try expectAccepted(try await server.post([event, other, copy, event].array, key: key),
                           Acceptance(accepted: 2, duplicates: 2))
        #expect(try await server.count("SELECT count(*) FROM events WHERE app_id = \(app) AND type = 'displayed'") == 1)
        #expect(try await server.storedCount(app: app) == 2)
    }

    @Test func concurrentRetriesStoreEachEventOnce() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let events = WireEvent.valid(20)
        let answers = try await withThrowingTaskGroup(of: Acceptance.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    let response = try await server.post(events.array, key: key)
                    #expect(response.status == 200)
                    return try JSONDecoder().decode(Acceptance.self, from: Data(response.body))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.map(\.accepted).reduce(0, +) == 20)
        #expect(answers.map(\.duplicates).reduce(0, +) == 5 * 20)
        #expect(try await server.storedCount(app: app) == 20)
    }

    @Test func ndjsonRejectsAMalformedLineAlone() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let valid = WireEvent.valid(3)
        // Blank lines do not count as events; \r\n line ends are accepted.
        let body = valid[0].json + "\n"
            + #"{"event_id":}"# + "\n"
            + "\n   \n"
            + valid[1].json + "\r\n"
            + WireEvent.displayed(extra: #","app_id":"x""#).json + "\n"
            + valid[2].json

        let response = try await server.post(body, key: key, contentType: "application/x-ndjson; charset=utf-8")

        try expectAccepted(response, Acceptance(accepted: 3, rejected: [
            RejectedEvent(1, nil, "malformed JSON at byte 12 of the line: unexpected character '}'"),
            RejectedEvent(3, "app_id", "unknown field"),
        ]))
        #expect(try await server.storedIDs(app: app) == Set(valid.ids))
    }

    @Test(arguments: ["application/ndjson", "application/jsonl", "application/x-ndjson"])
    func ndjsonMediaTypes(contentType: String) async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let events = WireEvent.valid(2)
        try expectAccepted(try await server.post(events.ndjson, key: key, contentType: contentType), Acceptance(accepted: 2))
        #expect(try await server.storedIDs(app: app) == Set(events.ids))
    }

    @Test func gzipBodiesInEveryFormat() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let batches = (0..<3).map { _ in WireEvent.valid(4) }

        try expectAccepted(try await server.postGzip(batches[0].array, key: key), Acceptance(accepted: 4))
        try expectAccepted(try await server.postGzip(#"{"events":\#(batches[1].array)}"#, key: key), Acceptance(accepted: 4))
        try expectAccepted(try await server.postGzip(batches[2].ndjson, key: key, contentType: "application/x-ndjson"),
                           Acceptance(accepted: 4))
        // x-gzip is the same thing, and a retry is recognised through the compression.
        let response = try await server.request("POST", "/v1/events", headers: [
            ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"), ("Content-Encoding", "x-gzip"),
        ], body: Gzip.deflate(Array(batches[0].array.utf8)))
        try expectAccepted(response, Acceptance(duplicates: 4))

        #expect(try await server.storedIDs(app: app) == Set(batches.flatMap(\.ids)))
    }

    @Test func eventsObjectShape() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let events = WireEvent.valid(2)
        let body = #"{"events":[\#(events[0].json),{"event_id":"x"},\#(events[1].json)]}"#
        try expectAccepted(try await server.post(body, key: key), Acceptance(accepted: 2, rejected: [
            RejectedEvent(1, "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
        ]))
        #expect(try await server.storedIDs(app: app) == Set(events.ids))
    }

    @Test func structuredSyntaxSuffixAndParametersAreJSON() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key, contentType: "Application/JSON; charset=utf-8"),
                           Acceptance(accepted: 1))
        try expectAccepted(try await server.post(WireEvent.valid(1).array, key: key, contentType: "application/vnd.engage.v1+json"),
                           Acceptance(accepted: 1))
        #expect(try await server.storedCount(app: app) == 2)
    }

    @Test func bearerSchemeIsCaseInsensitive() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let response = try await server.request("POST", "/v1/events", headers: [
            ("Authorization", "bearer \(key)"), ("Content-Type", "application/json"),
        ], body: Array(WireEvent.valid(1).array.utf8))
        try expectAccepted(response, Acceptance(accepted: 1))
    }

    /// `properties` goes into a `jsonb` column as sent, and `jsonb` holds numbers only within the
    /// range of PostgreSQL's `numeric`: a number beyond it must reject its event alone. Refused by
    /// PostgreSQL instead, it failed the whole group commit (503 for every request sharing it),
    /// and the client's resends failed the same way forever.
    @Test func aPropertyNumberOutOfRangeRejectsItsEventAlone() async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let valid = WireEvent.valid(2)
        let huge = WireEvent.displayed(extra: #","properties":{"score":1e1000000}"#)
        let tiny = WireEvent.displayed(extra: #","properties":{"nested":[{"x":-1e-20000}]}"#)
        let problem = "must hold only numbers a 64-bit float can hold (0, or 5e-324 to 1.7e308 in magnitude), with at most 16383 decimal places"

        // A zero PostgreSQL will not read (its exponent past 2^30 - 1): refused here, not by the database.
        let vastZero = WireEvent.displayed(extra: #","properties":{"x":0e1073741824}"#)

        let response = try await server.post([valid[0], huge, valid[1], tiny, vastZero].array, key: key)

        try expectAccepted(response, Acceptance(accepted: 2, rejected: [
            RejectedEvent(1, "properties", problem), RejectedEvent(3, "properties", problem), RejectedEvent(4, "properties", problem),
        ]))
        #expect(try await server.storedIDs(app: app) == Set(valid.ids))
    }

    @Test func eventsAreStoredUnderTheKeysAppOnly() async throws {
        let server = try SharedServer.get()
        let (mine, theirs) = (uniqueApp("mine"), uniqueApp("theirs"))
        let myKey = try await server.key(app: mine)
        let theirKey = try await server.key(app: theirs)
        let myEvents = WireEvent.valid(3)
        let theirEvents = WireEvent.valid(1)
        // Naming another app in the body is not a way in: app_id is not an event field.
        let smuggled = WireEvent.displayed(extra: #","app_id":"\#(theirs)""#)

        try expectAccepted(try await server.post((myEvents + [smuggled]).array, key: myKey),
                           Acceptance(accepted: 3, rejected: [RejectedEvent(3, "app_id", "unknown field")]))
        try expectAccepted(try await server.post(theirEvents.array, key: theirKey), Acceptance(accepted: 1))

        #expect(try await server.storedIDs(app: mine) == Set(myEvents.ids))
        #expect(try await server.storedIDs(app: theirs) == Set(theirEvents.ids))
        #expect(try await server.storedCount(ids: [smuggled.id]) == 0)
    }

    /// An event id is one key for all apps. When another app's event holds it, this app's event
    /// is not stored, and the answer must say so: called a duplicate, it read as "stored
    /// earlier", and the client deleted an event the log never had for its app.
    @Test func anEventIDAnotherAppHoldsIsRejectedNotCalledADuplicate() async throws {
        let server = try SharedServer.get()
        let (mine, theirs, myKey, taken) = try await anIDAnotherAppHolds(on: server)
        let myOwn = WireEvent.expanded()

        let rejection = RejectedEvent(1, "event_id", "is already the id of another app's event; give this event an id of its own")
        try expectAccepted(try await server.post([myOwn, WireEvent.displayed(id: taken.id)].array, key: myKey),
                           Acceptance(accepted: 1, rejected: [rejection]))
        try expectAccepted(try await server.post([myOwn, WireEvent.displayed(id: taken.id)].array, key: myKey),
                           Acceptance(duplicates: 1, rejected: [rejection]))
        #expect(try await server.storedIDs(app: mine) == [myOwn.id])
        #expect(try await server.storedIDs(app: theirs) == [taken.id])
    }

    /// A request that repeats an event id another app holds: neither copy is this app's
    /// duplicate. Counting the repeat as one answered "stored earlier" for an event the log
    /// never had for this app.
    @Test func anotherAppsIDRepeatedInARequestIsRejectedEachTime() async throws {
        let server = try SharedServer.get()
        let (mine, _, myKey, taken) = try await anIDAnotherAppHolds(on: server)
        let myOwn = WireEvent.expanded()
        let problem = "is already the id of another app's event; give this event an id of its own"

        try expectAccepted(try await server.post([WireEvent.displayed(id: taken.id), myOwn, myOwn, WireEvent.displayed(id: taken.id)].array,
                                                 key: myKey),
                           Acceptance(accepted: 1, duplicates: 1, rejected: [RejectedEvent(0, "event_id", problem),
                                                                             RejectedEvent(3, "event_id", problem)]))
        #expect(try await server.storedIDs(app: mine) == [myOwn.id])
    }

    /// Two new apps, a key of the first, and an event the second stored: its id is taken.
    private func anIDAnotherAppHolds(on server: TestServer) async throws -> (mine: String, theirs: String, myKey: String, taken: WireEvent) {
        let (mine, theirs) = (uniqueApp("mine"), uniqueApp("theirs"))
        let myKey = try await server.key(app: mine)
        let taken = WireEvent.displayed()
        try expectAccepted(try await server.post([taken].array, key: try await server.key(app: theirs)), Acceptance(accepted: 1))
        return (mine, theirs, myKey, taken)
    }

    /// Requests refused as a whole, each carrying valid events that must not be stored.
    enum RefusedRequest: String, CaseIterable, Sendable {
        case malformed, wrongShape, tooManyEvents, tooLarge, wrongContentType, unsupportedEncoding
        case noKey, unknownKey, readKey

        var status: Int {
            switch self {
            case .malformed, .wrongShape: 400
            case .tooManyEvents, .tooLarge: 413
            case .wrongContentType, .unsupportedEncoding: 415
            case .noKey, .unknownKey: 401
            case .readKey: 403
            }
        }
    }

    @Test(arguments: RefusedRequest.allCases)
    func refusedRequestStoresNothing(refusal: RefusedRequest) async throws {
        let server = try SharedServer.get()
        let app = uniqueApp()
        let key = try await server.key(app: app, role: refusal == .readKey ? .read : .ingest)
        let events = WireEvent.valid(refusal == .tooManyEvents ? 1001 : 5)
        var body = events.array
        var headers = [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")]
        switch refusal {
        case .malformed: body += "]"
        case .wrongShape: body = #"{"events":\#(body),"more":[]}"#
        case .tooManyEvents, .readKey: break
        case .tooLarge: body += String(repeating: " ", count: IngestRoute.Configuration().maxDecompressedBytes)
        case .wrongContentType: headers[1].1 = "text/plain"
        case .unsupportedEncoding: headers.append(("Content-Encoding", "br"))
        case .noKey: headers.removeFirst()
        case .unknownKey: headers[0].1 = "Bearer egk_00000000_" + String(repeating: "0", count: 40)
        }
        let response = try await server.request("POST", "/v1/events", headers: headers, body: Array(body.utf8))
        #expect(response.status == refusal.status, "\(response.text)")
        #expect(response.headers["Content-Type"] == "application/problem+json")
        #expect(try await server.storedCount(ids: events.ids) == 0)
        #expect(try await server.storedCount(app: app) == 0)
    }

    @Test func healthAndReadiness() async throws {
        let server = try SharedServer.get()
        let health = try await server.request("GET", "/healthz")
        #expect(health.status == 200)
        #expect(health.headers["Content-Type"] == "application/json")
        #expect(health.text == #"{"status":"ok"}"#)
        // Readiness is a state to wait for: on a machine busy with the rest of the suite the
        // database may miss the check's limit (2 s) once, and the server rightly says 503 then.
        var ready = try await server.request("GET", "/readyz")
        for _ in 0..<10 where ready.status == 503 { ready = try await server.request("GET", "/readyz") }
        #expect(ready.status == 200)
        #expect(ready.headers["Content-Type"] == "application/json")
        #expect(ready.text == #"{"status":"ready","database":"ok","migrations":"current"}"#)
    }
}
