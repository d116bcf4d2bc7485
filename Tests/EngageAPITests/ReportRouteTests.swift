import EngageAPI
import EngageCore
import EventStore
import Foundation
import HTTPServer
import Runtime
import Testing
import TestSupport

/// The parts of the `GET /v1/report` body these tests read (the whole shape is in openapi.yaml).
struct ReportBody: Decodable, Sendable {
    struct Filters: Decodable, Sendable {
        var app_ids: [String]
        var categories: [String]
        var from: String?
        var through: String?
    }

    struct Counts: Decodable, Sendable, Equatable {
        var notifications: Int
        var delivered: Int
        var displayed: Int
        var expanded: Int
        var actioned: Int
        var opened: Int
        var dismissed: Int
        var replied: Int
    }

    struct Group: Decodable, Sendable {
        var category: String?
        var attachment_kind: String?
        var day: String?
        var rich: Counts
        var plain: Counts
        var not_displayed: Counts
    }

    struct Telemetry: Decodable, Sendable {
        var delivered: Int
    }

    struct CurrentAsOf: Decodable, Sendable {
        var checkpoint_at: String?
        var lag_events: Int
        var lag_seconds: Double
    }

    var report: String
    var version: Int
    var current_as_of: CurrentAsOf
    var grouping: String
    var filters: Filters
    var rate_denominator: String
    var caveat: String
    var groups: [Group]
    var total: Group
    var telemetry_total: Telemetry
    var stratified: [Stratified]

    struct Effect: Decodable, Sendable {
        var method: String
        var estimate: Double
        var lower: Double
        var upper: Double
        var p_value: Double
        var significant: Bool
    }

    struct Stratified: Decodable, Sendable {
        var metric: String
        var headline: String
        var risk_ratio: Effect?
        var risk_difference: Effect?
        var unit: String
        var design_effect: DesignEffect?
    }

    struct DesignEffect: Decodable, Sendable {
        var risk_difference: Double
        var risk_ratio: Double
    }
}

@Suite("GET /v1/report")
struct ReportRouteTests {
    static let topLevelMembers: Set = [
        "report", "version", "generated_at", "current_as_of", "grouping", "filters", "confidence", "alpha", "rate_denominator",
        "caveat", "note", "groups", "total", "telemetry", "telemetry_by_attachment", "telemetry_total",
        "stratified_note", "stratified", "read_from",
    ]

    /// A simulated day of one app's traffic that ended an hour ago, as NDJSON bodies of at most
    /// 1000 events, and what the simulator realized.
    static func simulatedTraffic(notifications: Int, seed: UInt64) throws -> (bodies: [String], truth: SimulationGroundTruth) {
        var scenario = SimulationScenario.standard
        scenario.notificationCount = notifications
        let start = SystemTime().wallClock.adding(microseconds: -(scenario.spanSeconds + 3_600) * Timestamp.microsecondsPerSecond)
        var simulator = try TrafficSimulator(scenario: scenario, seed: seed, start: start,
                                             options: SimulationOptions(outOfOrderFraction: 0.2, duplicateFraction: 0.05))
        var bodies: [String] = []
        while let batch = simulator.next(batchSize: 1_000) {
            bodies.append(batch.map { String(decoding: $0.encodeWireJSON(), as: UTF8.self) + "\n" }.joined())
        }
        return (bodies, simulator.groundTruth)
    }

    /// The counts the report should show for one presentation of a simulation.
    static func expectedCounts(_ truth: SimulationGroundTruth, _ presentation: Presentation,
                               category: String? = nil) -> ReportBody.Counts {
        let tally = category.map { truth.realized(category: $0, presentation: presentation) }
            ?? truth.realized(presentation: presentation)
        // Every simulated notification is delivered and displayed.
        return ReportBody.Counts(notifications: tally[.displayed], delivered: tally[.displayed], displayed: tally[.displayed],
                                 expanded: tally[.expanded], actioned: tally[.actioned], opened: tally[.opened],
                                 dismissed: tally[.dismissed], replied: tally[.replied])
    }

    static let zero = ReportBody.Counts(notifications: 0, delivered: 0, displayed: 0, expanded: 0, actioned: 0,
                                        opened: 0, dismissed: 0, replied: 0)

    /// Waits until the server's projector has folded every event stored.
    static func waitForProjector(_ server: TestServer) async throws {
        try await waitUntil("the projector caught up", timeout: .seconds(60)) {
            let processed = try await server.count("""
                SELECT coalesce((SELECT events_processed FROM projection_checkpoints WHERE projection = 'engagement'), 0)
                """)
            let stored = try await server.count("SELECT count(*) FROM events")
            return processed == stored
        }
    }

    static func getReport(_ server: TestServer, _ query: String = "", key: String?) async throws -> RawHTTPClient.Response {
        let headers = key.map { [("Authorization", "Bearer \($0)")] } ?? []
        return try await server.request("GET", "/v1/report" + query, headers: headers)
    }

    static func decodeReport(_ response: RawHTTPClient.Response, sourceLocation: SourceLocation = #_sourceLocation) throws -> ReportBody {
        try #require(response.status == 200, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.headers["Content-Type"] == "application/json", sourceLocation: sourceLocation)
        #expect(try memberNames(response.body) == topLevelMembers, sourceLocation: sourceLocation)
        // The strict parser of engage reads it too (no NaN, unique keys).
        _ = try JSON.parse(response.body)
        return try JSONDecoder().decode(ReportBody.self, from: Data(response.body))
    }

    /// The headline over HTTP is the Mantel-Haenszel ratio of the simulator's own per-category counts,
    /// with the device as the unit: its log interval is the large-strata one widened by the design
    /// effect the report states (clustered variance = design effect x binomial variance).
    static func checkAdjustedAnswer(_ report: ReportBody, _ truth: SimulationGroundTruth,
                                    sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(report.stratified.map(\.metric) == ["expansion", "action", "open", "dismiss", "reply"],
                sourceLocation: sourceLocation)
        let expansion = try #require(report.stratified.first, sourceLocation: sourceLocation)
        let strata = try truth.categories.map { category in
            let rich = truth.realized(category: category.name, presentation: .rich)
            let plain = truth.realized(category: category.name, presentation: .plain)
            return Stratum(name: category.name,
                           variant: try Proportion(successes: rich[.expanded], trials: rich[.displayed]),
                           control: try Proportion(successes: plain[.expanded], trials: plain[.displayed]))
        }
        let summary = try StratifiedComparison(strata: strata).mantelHaenszelRiskRatio()
        let ratio = try #require(expansion.risk_ratio, sourceLocation: sourceLocation)
        #expect(expansion.unit == "device", sourceLocation: sourceLocation)
        #expect(ratio.method == "mantel_haenszel_device_clustered", sourceLocation: sourceLocation)
        let designEffect = try #require(expansion.design_effect, sourceLocation: sourceLocation).risk_ratio
        #expect(designEffect > 0.5 && designEffect < 3, sourceLocation: sourceLocation)
        let lower = exp(log(summary.estimate) - 1.959963984540054 * (designEffect * summary.largeStrataLogVariance).squareRoot())
        #expect(abs(ratio.estimate - summary.estimate) <= 1e-12 * summary.estimate, sourceLocation: sourceLocation)
        #expect(abs(ratio.lower - lower) <= 1e-9, sourceLocation: sourceLocation)
        #expect(ratio.significant == (ratio.lower > 1 || ratio.upper < 1), sourceLocation: sourceLocation)
        #expect(expansion.headline.hasPrefix("Adjusted for category, rich notifications are expanded "),
                sourceLocation: sourceLocation)
    }

    // MARK: - Reports over real traffic

    @Test(.timeLimit(.minutes(3)))
    func eachReadKeySeesOnlyItsOwnAppsNumbers() async throws {
        let server = try TestServer()
        do {
            let a = try Self.simulatedTraffic(notifications: 300, seed: 11)
            let b = try Self.simulatedTraffic(notifications: 120, seed: 12)
            for (app, traffic) in [("app-a", a), ("app-b", b)] {
                let ingest = try await server.key(app: app, role: .ingest)
                for body in traffic.bodies {
                    let response = try await server.post(body, key: ingest, contentType: "application/x-ndjson")
                    try #require(response.status == 200, "\(response.text)")
                }
            }
            try await Self.waitForProjector(server)

            for (app, truth) in [("app-a", a.truth), ("app-b", b.truth)] {
                let read = try await server.key(app: app, role: .read)
                let report = try Self.decodeReport(try await Self.getReport(server, key: read))
                #expect(report.report == "engagement" && report.version == 1 && report.grouping == "category")
                #expect(report.filters.app_ids == [app])
                #expect(report.caveat == EngagementReport.caveat)
                #expect(report.rate_denominator == "displayed")
                #expect(report.total.rich == Self.expectedCounts(truth, .rich), "\(app) rich")
                try Self.checkAdjustedAnswer(report, truth)
                #expect(report.total.plain == Self.expectedCounts(truth, .plain), "\(app) plain")
                #expect(report.total.not_displayed == Self.zero)
                #expect(report.telemetry_total.delivered == truth.notifications)
                let categories = Set(truth.realized.keys.map(\.category))
                #expect(report.groups.compactMap(\.category) == categories.sorted())
                for group in report.groups {
                    let category = try #require(group.category)
                    #expect(group.rich == Self.expectedCounts(truth, .rich, category: category), "\(app) \(category)")
                    #expect(group.plain == Self.expectedCounts(truth, .plain, category: category), "\(app) \(category)")
                }
            }

            // An admin key reads its own app's report too; the app is never chosen by the query.
            let admin = try await server.key(app: "app-b", role: .admin)
            let asAdmin = try Self.decodeReport(try await Self.getReport(server, key: admin))
            #expect(asAdmin.total.rich == Self.expectedCounts(b.truth, .rich))
            let readA = try await server.key(app: "app-a", role: .read)
            try expectProblem(try await Self.getReport(server, "?app=app-b", key: readA), .badRequest(
                "bad-query", "unknown query parameter app; use category, since, until or by"))
            // An app without events gets an empty report, not another app's.
            let empty = try Self.decodeReport(try await Self.getReport(server, key: try await server.key(app: "app-c", role: .read)))
            #expect(empty.groups.isEmpty)
            #expect(empty.total.rich == Self.zero && empty.total.plain == Self.zero)
            #expect(empty.telemetry_total.delivered == 0)

            try await Self.checkFiltersAndDays(server, key: readA, truth: a.truth)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// `category`, `by=day`, `since` and `until` over app A's traffic.
    static func checkFiltersAndDays(_ server: TestServer, key: String, truth: SimulationGroundTruth) async throws {
        let photoResponse = try await getReport(server, "?category=new_photo", key: key)
        let photo = try decodeReport(photoResponse)
        let live = memberPaths(try JSONSerialization.jsonObject(with: Data(photoResponse.body)))
        #expect(live == memberPaths(try documentedExample()), "openapi.yaml's example has the shape of a live report")
        #expect(photo.filters.categories == ["new_photo"])
        #expect(photo.groups.map(\.category) == ["new_photo"])
        #expect(photo.total.rich == expectedCounts(truth, .rich, category: "new_photo"))

        let byDay = try decodeReport(try await getReport(server, "?by=day", key: key))
        #expect(byDay.grouping == "day")
        #expect(byDay.total.rich == expectedCounts(truth, .rich))
        #expect(byDay.groups.allSatisfy { $0.day != nil && $0.category != nil })
        let days = Set(byDay.groups.compactMap(\.day)).sorted()
        #expect((1...2).contains(days.count), "a simulated day of traffic lies on one or two UTC days: \(days)")
        for category in Set(byDay.groups.compactMap(\.category)) {
            let parts = byDay.groups.filter { $0.category == category }
            #expect(parts.reduce(0) { $0 + $1.rich.displayed + $1.plain.displayed }
                    == expectedCounts(truth, .rich, category: category).displayed
                    + expectedCounts(truth, .plain, category: category).displayed, "\(category)")
        }

        // One day alone, through since and until, is that day's part of the day grouping.
        let day = try #require(days.last)
        let oneDay = try decodeReport(try await getReport(server, "?since=\(day)&until=\(day)&by=day", key: key))
        #expect(oneDay.filters.from == day && oneDay.filters.through == day)
        #expect(oneDay.groups.allSatisfy { $0.day == day })
        #expect(oneDay.total.rich.displayed == byDay.groups.filter { $0.day == day }.reduce(0) { $0 + $1.rich.displayed })
        // Every grouping honours since and until, not only by=day: a range covering every day of
        // the traffic is the whole report.
        let first = try #require(days.first)
        for grouping in ReportGrouping.allCases {
            let rangeResponse = try await getReport(server, "?since=\(first)&until=\(day)&by=\(grouping.rawValue)", key: key)
            let range = try decodeReport(rangeResponse)
            let everything = try await getReport(server, "?by=\(grouping.rawValue)", key: key)
            #expect(try totalActions(rangeResponse) == totalActions(everything), "actions with by=\(grouping.rawValue)")
            #expect(range.total.rich == expectedCounts(truth, .rich), "since and until with by=\(grouping.rawValue)")
            #expect(range.total.plain == expectedCounts(truth, .plain), "since and until with by=\(grouping.rawValue)")
            #expect(Set(range.groups.compactMap(\.category)) == Set(byDay.groups.compactMap(\.category)),
                    "since and until with by=\(grouping.rawValue)")
        }
        let later = try decodeReport(try await getReport(server, "?since=2999-01-01", key: key))
        #expect(later.groups.isEmpty && later.total.rich == zero)
    }

    /// The `actions` counts of the total's rich and plain notifications (filled with `by=action`).
    static func totalActions(_ response: RawHTTPClient.Response) throws -> [String: [String: Int]] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        let total = try #require(object["total"] as? [String: Any])
        var actions: [String: [String: Int]] = [:]
        for side in ["rich", "plain"] {
            let counts = try #require(total[side] as? [String: Any])
            actions[side] = try #require(counts["actions"] as? [String: Int])
        }
        return actions
    }

    // MARK: - The documented shape

    /// The 200 example of `GET /v1/report` in openapi.yaml: JSON that starts on a line
    /// `value: {"report": "engagement",` and goes on over the lines indented deeper.
    static func documentedExample() throws -> Any {
        let lines = try OpenAPIDocumentTests.text("openapi.yaml").split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.drop { $0 == " " }.hasPrefix(#"value: {"report": "engagement","#) })
        let indent = lines[start].prefix { $0 == " " }.count
        let rest = lines[(start + 1)...].prefix { line in line.prefix { $0 == " " }.count > indent }
        let text = ([lines[start].drop { $0 == " " }.dropFirst("value: ".count)] + rest).joined(separator: "\n")
        return try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    /// Every object's member names by path (`groups[].metrics[].rich`), arrays merged.
    /// `actions` objects are left out: their members are action IDs, data rather than shape.
    static func memberPaths(_ value: Any, at path: String = "", into paths: inout [String: Set<String>]) {
        if let object = value as? [String: Any] {
            paths[path, default: []].formUnion(object.keys)
            for (key, member) in object where key != "actions" {
                memberPaths(member, at: path + "." + key, into: &paths)
            }
        } else if let array = value as? [Any] {
            for element in array { memberPaths(element, at: path + "[]", into: &paths) }
        }
    }

    static func memberPaths(_ value: Any) -> [String: Set<String>] {
        var paths: [String: Set<String>] = [:]
        memberPaths(value, into: &paths)
        return paths
    }

    @Test func theDocumentedExampleIsAValidReport() throws {
        let example = try #require(try Self.documentedExample() as? [String: Any])
        #expect(Set(example.keys) == Self.topLevelMembers)
        #expect(example["caveat"] as? String == EngagementReport.caveat)
        #expect(example["note"] as? String == EngagementReport.denominatorNote)
        let paths = Self.memberPaths(example)
        #expect(paths[".groups[].metrics[]"]?.contains("p_value") == true)
        #expect(example["stratified_note"] as? String == EngagementReport.stratifiedNote)
        #expect(paths[".stratified[]"]?.isSuperset(of: ["headline", "risk_ratio", "risk_difference", "cmh",
                                                        "homogeneity", "crude_ratio", "crude_disagreement"]) == true)
        #expect(paths[".telemetry_total.outcomes"] == Set(DeliveryOutcome.allCases.map(\.rawValue)))
    }

    // MARK: - Keys

    @Test func withoutAKeyTheAnswerIs401() async throws {
        let server = try SharedServer.get()
        let response = try await Self.getReport(server, key: nil)
        try expectProblem(response, .unauthorized("send the key as Authorization: Bearer <key>"))
        #expect(response.headers["WWW-Authenticate"] == "Bearer")
        try expectProblem(try await Self.getReport(server, key: "egk_00000000_" + String(repeating: "0", count: 40)),
                          .unauthorized("the key is unknown or revoked"))
    }

    @Test func anIngestKeyMayNotReadReports() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp(), role: .ingest)
        let response = try await Self.getReport(server, key: key)
        try #require(response.status == 403, "\(response.text)")
        #expect(response.headers["Content-Type"] == "application/problem+json")
        let problem = try JSONDecoder().decode(Problem.self, from: Data(response.body))
        #expect(problem.type == "https://engage.dev/problems/forbidden")
        #expect(problem.title == "This key may not do that")
        #expect(problem.detail.hasSuffix("ingest key cannot read reports"))
        #expect(try memberNames(response.body) == ["type", "title", "status", "detail"])
    }

    // MARK: - Query parameters

    @Test(arguments: [
        ("?since=yesterday", "since must be a date such as 2026-11-29"),
        ("?since=2026-02-30", "since must be a date such as 2026-11-29"),
        ("?since=2026-1-05", "since must be a date such as 2026-11-29"),
        ("?until=20261129", "until must be a date such as 2026-11-29"),
        ("?since=2026-12-05&until=2026-12-01", "since 2026-12-05 is after until 2026-12-01: no day lies between them"),
        ("?until=2026-12-01&since=2026-12-05", "since 2026-12-05 is after until 2026-12-01: no day lies between them"),
        ("?category=", "category must name a notification category such as new_photo, without control characters"),
        // A NUL (PostgreSQL text cannot hold one) was a 503 "database unavailable", retried for ever.
        ("?category=a%00b", "category must name a notification category such as new_photo, without control characters"),
        // PostgreSQL has no year 0 (its date input refuses it), and a sign is not a digit.
        ("?since=0000-01-01", "since must be a date such as 2026-11-29"),
        ("?until=2026-%2B1-05", "until must be a date such as 2026-11-29"),
        ("?by=week", "by must be one of category, attachment, day, action"),
        ("?by=", "by must be one of category, attachment, day, action"),
        ("?format=csv", "unknown query parameter format; use category, since, until or by"),
        ("?category=new_photo&limit=10", "unknown query parameter limit; use category, since, until or by"),
    ])
    func badQueriesAreRefusedWith400(query: String, detail: String) async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp(), role: .read)
        try expectProblem(try await Self.getReport(server, query, key: key), .badRequest("bad-query", detail))
    }

    @Test func everyGroupingAnswers() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp(), role: .read)
        for grouping in ReportGrouping.allCases {
            let report = try Self.decodeReport(try await Self.getReport(server, "?by=\(grouping.rawValue)", key: key))
            #expect(report.grouping == grouping.rawValue)
            #expect(report.caveat == EngagementReport.caveat)
        }
    }

    @Test func onlyGetAndHeadAreAllowed() async throws {
        let server = try SharedServer.get()
        let key = try await server.key(app: uniqueApp(), role: .read)
        let response = try await server.request("POST", "/v1/report", headers: [("Authorization", "Bearer \(key)")])
        #expect(response.status == 405)
        #expect(response.headers["Allow"]?.contains("GET") == true)
    }
}
