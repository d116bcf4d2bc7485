import EngageAPI
import Foundation
import HTTPServer
import Postgres
import Testing
import TestSupport

/// One v1 event as a client sends it: its id and its JSON text.
struct WireEvent: Sendable {
    var id: UUID
    var json: String

    /// A valid `displayed` event that occurred `age` seconds ago.
    static func displayed(id: UUID = UUID(), age: TimeInterval = 0, extra: String = "") -> WireEvent {
        WireEvent(id: id, json: #"{"event_id":"\#(id.uuidString.lowercased())","type":"displayed","notification_id":"apns-1","device_id":"d1","category":"new_photo","occurred_at":"\#(timestamp(ago: age))","presentation":"rich","attachment_kind":"image"\#(extra)}"#)
    }

    /// A valid `expanded` event (no fields of its own).
    static func expanded(id: UUID = UUID()) -> WireEvent {
        WireEvent(id: id, json: #"{"event_id":"\#(id.uuidString.lowercased())","type":"expanded","notification_id":"apns-2","device_id":"d2","category":"new_photo","occurred_at":"\#(timestamp(ago: 0))"}"#)
    }

    /// Valid events, alternating types.
    static func valid(_ count: Int) -> [WireEvent] {
        (0..<count).map { $0.isMultiple(of: 2) ? displayed() : expanded() }
    }

    static func timestamp(ago seconds: TimeInterval) -> String {
        ISO8601DateFormatter().string(from: Date().addingTimeInterval(-seconds))
    }
}

/// Three valid events among five that are not, each for another reason, and the answer it gets.
struct PartlyValidBatch {
    let valid = WireEvent.valid(3)

    var body: String {
        "[" + [
            valid[0].json,
            WireEvent.displayed(extra: #","app_id":"someone-else""#).json,
            valid[1].json,
            #"{"event_id":"nope","type":"expanded"}"#,
            WireEvent.displayed(age: 45 * 86_400 + 60).json,
            valid[2].json,
            #"{"event_id":"\#(UUID().uuidString)","type":"opened"}"#,
            "17",
        ].joined(separator: ",") + "]"
    }

    static let answer = Acceptance(accepted: 3, rejected: [
        RejectedEvent(1, "app_id", "unknown field"),
        RejectedEvent(3, "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
        RejectedEvent(4, "occurred_at", "is 45 days in the past; the limit is 30 days"),
        RejectedEvent(6, "type", "must be one of sent, delivered, displayed, expanded, action"),
        RejectedEvent(7, nil, "must be a JSON object"),
    ])
}

extension [WireEvent] {
    /// A JSON array body.
    var array: String { "[" + map(\.json).joined(separator: ",") + "]" }
    /// An NDJSON body, one event per line.
    var ndjson: String { map { $0.json + "\n" }.joined() }
    var ids: [UUID] { map(\.id) }
}

/// A new app name, so that tests sharing a server never see each other's events.
func uniqueApp(_ label: String = "app") -> String {
    "\(label)-\(UUID().uuidString.prefix(8).lowercased())"
}

// MARK: - Response bodies

struct RejectedEvent: Decodable, Equatable, Sendable, CustomStringConvertible {
    var index: Int
    var field: String?
    var problem: String

    init(_ index: Int, _ field: String?, _ problem: String) {
        self.index = index
        self.field = field
        self.problem = problem
    }

    var description: String { "#\(index) \(field ?? "-"): \(problem)" }
}

/// The 200 body of `POST /v1/events`.
struct Acceptance: Decodable, Equatable, Sendable {
    var accepted: Int
    var duplicates: Int
    var rejected: [RejectedEvent]

    init(accepted: Int = 0, duplicates: Int = 0, rejected: [RejectedEvent] = []) {
        self.accepted = accepted
        self.duplicates = duplicates
        self.rejected = rejected
    }
}

/// An RFC 9457 problem document with the extension members engage uses.
struct Problem: Decodable, Equatable, Sendable {
    var type: String
    var title: String
    var status: Int
    var detail: String
    var offset: Int?
    var rejected: [RejectedEvent]?

    init(_ slug: String, status: Int, title: String, detail: String, offset: Int? = nil, rejected: [RejectedEvent]? = nil) {
        self.type = "https://engage.dev/problems/" + slug
        self.title = title
        self.status = status
        self.detail = detail
        self.offset = offset
        self.rejected = rejected
    }

    /// The members the document must have: no more, no fewer.
    var memberNames: Set<String> {
        var names: Set = ["type", "title", "status", "detail"]
        if offset != nil { names.insert("offset") }
        if rejected != nil { names.insert("rejected") }
        return names
    }

    static func unauthorized(_ detail: String) -> Problem {
        Problem("unauthorized", status: 401, title: "Missing or invalid API key", detail: detail)
    }

    static func unsupportedMediaType(_ detail: String) -> Problem {
        Problem("unsupported-media-type", status: 415, title: "Unsupported media type", detail: detail)
    }

    static func tooLarge(_ detail: String) -> Problem {
        Problem("payload-too-large", status: 413, title: "The request is too large", detail: detail)
    }

    static func badRequest(_ slug: String, _ detail: String) -> Problem {
        Problem(slug, status: 400, title: "Bad request", detail: detail)
    }

    static let databaseUnavailable = Problem(
        "database-unavailable", status: 503, title: "The event log is unreachable",
        detail: "nothing from this request was stored; retry after the number of seconds in Retry-After")

    /// An append the database did not answer: some of it may be stored.
    static let eventsNotAcknowledged = Problem(
        "database-unavailable", status: 503, title: "The event log is unreachable",
        detail: "the events are not acknowledged, and some may be stored (the database stopped answering while they were committed, "
            + "or never answered); resend them unchanged after the number of seconds in Retry-After: any stored are then reported as duplicates")

    static let unconfirmedCommit = Problem(
        "commit-unconfirmed", status: 503, title: "The commit is not confirmed on the synchronous standbys",
        detail: "committed but not confirmed on the synchronous standbys; resend with the same event ids")

    static let unverifiableCommit = Problem(
        "commit-unconfirmed", status: 503, title: "The commit is not confirmed on the synchronous standbys",
        detail: "committed but not confirmed on the synchronous standbys: the database role cannot read their positions "
            + "(GRANT pg_read_all_stats TO the role engage connects as); resend with the same event ids")

    static let contentTypeDetail = #"send Content-Type: application/json (an array or {"events": [...]}) or application/x-ndjson"#
}

/// The top-level member names of a JSON object body.
func memberNames(_ body: [UInt8]) throws -> Set<String> {
    let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    return Set(object.keys)
}

/// Checks a 200 answer: its body exactly, member by member.
func expectAccepted(_ response: RawHTTPClient.Response, _ expected: Acceptance,
                    sourceLocation: SourceLocation = #_sourceLocation) throws {
    try #require(response.status == 200, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.headers["Content-Type"] == "application/json", sourceLocation: sourceLocation)
    let body = try JSONDecoder().decode(Acceptance.self, from: Data(response.body))
    #expect(body == expected, sourceLocation: sourceLocation)
    #expect(try memberNames(response.body) == ["accepted", "duplicates", "rejected"], sourceLocation: sourceLocation)
    // Every rejection spells out its field, as null for the event as a whole.
    if let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
       let rejected = object["rejected"] as? [[String: Any]] {
        for rejection in rejected {
            #expect(Set(rejection.keys) == ["index", "field", "problem"], sourceLocation: sourceLocation)
        }
    }
}

/// Checks a problem answer member by member, and its Retry-After header (absent when nil).
func expectProblem(_ response: RawHTTPClient.Response, _ expected: Problem, retryAfter: String? = nil,
                   sourceLocation: SourceLocation = #_sourceLocation) throws {
    try #require(response.status == expected.status, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.headers["Content-Type"] == "application/problem+json", sourceLocation: sourceLocation)
    #expect(response.headers["Retry-After"] == retryAfter, sourceLocation: sourceLocation)
    let body = try JSONDecoder().decode(Problem.self, from: Data(response.body))
    #expect(body == expected, sourceLocation: sourceLocation)
    #expect(try memberNames(response.body) == expected.memberNames, sourceLocation: sourceLocation)
}

// MARK: - Servers and the database

/// One server shared by the suites whose tests can run side by side: each test uses apps of its
/// own.
enum SharedServer {
    private static let instance = Result { try TestServer() }

    static func get() throws -> TestServer { try instance.get() }
}

extension TestServer {
    /// Events stored under `app`.
    func storedCount(app: String) async throws -> Int {
        try await count("SELECT count(*) FROM events WHERE app_id = \(app)")
    }

    /// Rows in `events` with any of these ids, in any app.
    func storedCount(ids: [UUID]) async throws -> Int {
        try await count("SELECT count(*) FROM events WHERE event_id = ANY(\(ids))")
    }

    /// The ids stored under `app`.
    func storedIDs(app: String) async throws -> Set<UUID> {
        try await pool.withConnection { connection in
            let rows = try connection.query("SELECT event_id::text FROM events WHERE app_id = \(app)")
            return Set(try rows.rows.map { UUID(uuidString: try $0.decode(0, as: String.self))! })
        }
    }

    func postGzip(_ body: String, key: String, contentType: String = "application/json") async throws -> RawHTTPClient.Response {
        try await request("POST", "/v1/events",
                          headers: [("Authorization", "Bearer \(key)"), ("Content-Type", contentType), ("Content-Encoding", "gzip")],
                          body: Gzip.deflate(Array(body.utf8)))
    }
}

/// Polls `condition` every 10 ms until it holds; fails the test after `timeout`.
func waitUntil(_ what: String, timeout: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation,
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// A connection of the test's own holding `events` in SHARE mode, which holds every committer
/// back at its COPY until `release()` (readers go on).
final class EventLogLock {
    private let connection: Connection
    private var held = true

    init(_ database: PostgresConfiguration) throws {
        connection = try Connection(configuration: database)
        try connection.execute("BEGIN")
        try connection.execute("LOCK TABLE events IN SHARE MODE")
    }

    deinit {
        release()
        connection.close()
    }

    func release() {
        guard held else { return }
        held = false
        _ = try? connection.execute("ROLLBACK")
    }

    /// Sessions waiting for a lock on `events`.
    static func waiters(_ server: TestServer) async throws -> Int {
        // Databases copied from one template share table oids: look in this database only.
        try await server.count("""
            SELECT count(*) FROM pg_locks WHERE relation = 'events'::regclass AND NOT granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """)
    }
}

/// A sample's value in Prometheus text, by its full name with labels as rendered.
func metricSamples(_ text: String) -> [String: String] {
    var samples: [String: String] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " ") else { continue }
        samples[String(line[..<space])] = String(line[line.index(after: space)...])
    }
    return samples
}
