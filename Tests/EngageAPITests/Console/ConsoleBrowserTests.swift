import EngageAPI
import EngageCore
import Foundation
import HTTPServer
import Testing
import TestSupport

/// The console in a real browser (headless Chromium) on a server with simulated traffic through
/// the API and an experiment analysed three times: every page loads without a console message,
/// in light and dark, at desktop and phone width; the report page shows exactly the numbers of
/// `engage report --format json` for the same data. With `ENGAGE_CONSOLE_SCREENSHOTS=DIR` (see
/// scripts/console-screenshots) each page's screenshot is written to DIR as well.
@Suite("Console in a browser", .serialized)
struct ConsoleBrowserTests {
    /// The pages and their screenshots' names.
    static let pages: [(name: String, path: String)] = [
        ("report", "/console/report"), ("report-by-attachment", "/console/report?by=attachment"),
        ("extension", "/console/extension"), ("experiments", "/console/experiments"),
        ("experiment", "/console/experiments/strategy-full-vs-adaptive"), ("ingestion", "/console/ingestion"),
    ]

    /// The browser's own line for a page answered 401 (which the console's refusals must be).
    static func isRefusalOfTheDocument(_ message: HeadlessBrowser.ConsoleMessage, url: String) -> Bool {
        message.source == "network" && message.url == url && message.text.contains("status of 401")
    }

    @Test(.timeLimit(.minutes(10)))
    func everyPageLoadsCleanlyAndShowsTheNumbersOfEngageReport() async throws {
        try await TestServer.withServer { server in
            // The database is the test's own: the app may have the quick start's name.
            let app = "demo"
            let admin = try await server.key(app: app, role: .admin)
            let read = try await server.key(app: app, role: .read)
            try await Self.sendTrafficAndAnalyse(server, app: app, admin: admin)
            let base = "http://127.0.0.1:\(server.port)"
            let screenshots = ProcessInfo.processInfo.environment["ENGAGE_CONSOLE_SCREENSHOTS"].flatMap { $0.isEmpty ? nil : $0 }

            let captured = try await offPool { () throws -> [String: String] in
                let browser = try HeadlessBrowser()
                defer { browser.close() }
                var html: [String: String] = [:]
                func save(_ name: String) throws {
                    let png = try browser.screenshot()
                    #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "\(name): \(png.count) bytes")
                    if let screenshots {
                        try Data(png).write(to: URL(fileURLWithPath: screenshots).appendingPathComponent("console-\(name).png"))
                    }
                }
                try browser.setViewport(width: 1200, height: 900)
                try browser.setColorScheme(dark: false)

                // Signed out: a page is refused with the sign-in form; the form's page itself is clean.
                let refused = try browser.load(base + "/console/report")
                #expect(refused.allSatisfy { Self.isRefusalOfTheDocument($0, url: base + "/console/report") }, "\(refused)")
                #expect(try browser.html().contains(ConsoleClient.loginFormMarker))
                #expect(try browser.load(base + "/console/login").isEmpty)
                try save("login")
                // Signing in as a person would; the cookie is out of the page's reach (HttpOnly).
                let signedIn = try browser.submitForm(action: "/console/login", fields: ["key": read])
                #expect(signedIn.isEmpty, "\(signedIn)")
                #expect(try browser.location() == base + "/console/report?app=\(app)")
                #expect(try browser.scriptVisibleCookies() == "")
                #expect(try browser.html().contains("<span>read key</span>"))
                // An admin key added beside it, through the same form: the pages then offer start and stop.
                #expect(try browser.load(base + "/console/login?add=1&next=%2Fconsole%2Fexperiments").isEmpty)
                #expect(try browser.html().contains("Add a key"))
                #expect(try browser.submitForm(action: "/console/login", fields: ["key": admin]).isEmpty)
                #expect(try browser.location() == base + "/console/experiments?app=\(app)")
                #expect(try browser.html().contains("<span>admin key</span>"))

                for (dark, width, height) in [(false, 1200, 900), (true, 390, 844)] {
                    try browser.setColorScheme(dark: dark)
                    for (name, path) in Self.pages {
                        // The experiment's page is long: its picture shows the decision and the lift per look.
                        try browser.setViewport(width: width, height: name == "experiment" && !dark ? 1750 : height, mobile: width < 600)
                        let messages = try browser.load(base + path + (path.contains("?") ? "&" : "?") + "app=" + app)
                        #expect(messages.isEmpty, "\(name) \(dark ? "dark" : "light") \(width): \(messages)")
                        let document = try browser.html()
                        #expect(document.contains("<nav class=\"sections\""), "\(name)")
                        if name == "experiment" { #expect(document.contains(">Stop experiment</button>")) }
                        if !dark { html[name] = document }
                        if !dark || ["report", "experiment"].contains(name) {
                            try save(dark ? "\(name)-phone-dark" : name)
                        }
                    }
                }
                return html
            }
            try Self.compare(try #require(captured["report"]), with: try Self.engageReport(server, app: app, grouping: "category"))
            try Self.compare(try #require(captured["report-by-attachment"]),
                             with: try Self.engageReport(server, app: app, grouping: "attachment"))
            try Self.compareTelemetry(try #require(captured["extension"]), with: try Self.engageReport(server, app: app, grouping: "category"))
            try await Self.compareExperiment(try #require(captured["experiment"]), server: server, admin: admin)
            try await Self.compareIngestion(try #require(captured["ingestion"]), server: server)
        }
    }

    /// The detector works: a page with a script error, a console.error and a style its CSP forbids
    /// is reported with all three.
    @Test(.timeLimit(.minutes(2)))
    func aPageWithDeliberateErrorsIsCaught() async throws {
        let messages = try await offPool { () throws -> [HeadlessBrowser.ConsoleMessage] in
            let browser = try HeadlessBrowser()
            defer { browser.close() }
            let page = """
                <!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="style-src 'none'; script-src 'unsafe-inline'">
                <p style="color:red">styled</p><script>console.error("deliberate error"); undefinedFunction();</script>
                """
            return try browser.load("data:text/html;charset=utf-8," + (page.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
        }
        let problems = messages.filter(\.isProblem)
        #expect(problems.contains { $0.source == "console-api" && $0.text == "deliberate error" }, "\(messages)")
        #expect(problems.contains { $0.source == "exception" && $0.text.contains("undefinedFunction") }, "\(messages)")
        #expect(problems.contains { $0.text.contains("Content Security Policy") }, "\(messages)")
    }

    // MARK: Data

    /// A simulated day in three parts, the experiment analysed after each (three looks), and a
    /// request with rejected events for the ingestion page.
    static func sendTrafficAndAnalyse(_ server: TestServer, app: String, admin: String) async throws {
        let ingest = try await server.key(app: app, role: .ingest)
        let definition = #"{"id":"strategy-full-vs-adaptive","app_id":"\#(app)","arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},{"name":"treatment","strategy":"adaptive","weight":0.5}],"primary_metric":"open","guardrails":[{"metric":"dismiss"},{"metric":"rich_display"}],"alpha":0.05,"schedule":"0 * * * *"}"#
        let auth = [("Authorization", "Bearer \(admin)")]
        #expect(try await server.request("POST", "/v1/experiments", headers: auth + [("Content-Type", "application/json")],
                                         body: Array(definition.utf8)).status == 201)
        #expect(try await server.request("POST", "/v1/experiments/strategy-full-vs-adaptive/start", headers: auth).status == 200)
        let traffic = try ReportRouteTests.simulatedTraffic(notifications: 3_000, seed: 20)
        let thirds = stride(from: 0, to: traffic.bodies.count, by: max(1, (traffic.bodies.count + 2) / 3)).map {
            traffic.bodies[$0..<min($0 + max(1, (traffic.bodies.count + 2) / 3), traffic.bodies.count)]
        }
        for part in thirds {
            for body in part {
                let response = try await server.post(body, key: ingest, contentType: "application/x-ndjson")
                try #require(response.status == 200, "\(response.text.prefix(200))")
            }
            let run = try await server.request("POST", "/v1/experiments/strategy-full-vs-adaptive/run", headers: auth)
            try #require(run.status == 201, "\(run.text.prefix(300))")
        }
        _ = try await server.post(#"[{"event_id":"x"},[]]"#, key: ingest)
        try await ReportRouteTests.waitForProjector(server)
    }

    /// What `engage report --format json` prints for the app, run as a process of its own.
    static func engageReport(_ server: TestServer, app: String, grouping: String) throws -> EngageReportJSON {
        let output = NSTemporaryDirectory() + "engage-console-report-\(UUID().uuidString.prefix(8)).json"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try BuiltProgram.path("engage"))
        process.arguments = ["report", "--format", "json", "--app", app, "--by", grouping, "--output", output,
                             "--database", server.database.connectionString]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "engage report exited \(process.terminationStatus)")
        // JSONDecoder reads every number back exactly (JSONSerialization may not).
        return try JSONDecoder().decode(EngageReportJSON.self, from: Data(contentsOf: URL(fileURLWithPath: output)))
    }

    // MARK: Comparisons

    /// Every metric row of the page (the data attributes and the text shown) against the same
    /// group and metric of the JSON, and no row missing on either side.
    static func compare(_ html: String, with report: EngageReportJSON) throws {
        let rows = PageRows.rows(html, marker: "data-metric")
        var expected = 0
        for group in report.groups + [report.total] {
            let (category, kind, day) = (group.category ?? "", group.attachment_kind ?? "", group.day ?? "")
            for metric in group.metrics {
                expected += 1
                let matching = rows.filter {
                    $0.attributes["category"] == category && $0.attributes["attachment"] == kind && $0.attributes["day"] == day
                        && $0.attributes["metric"] == metric.metric
                }
                try #require(matching.count == 1, "\(category) \(kind) \(day) \(metric.metric): \(matching.count) rows")
                let row = matching[0]
                let label = "\(category) \(kind) \(day) \(metric.metric)"
                for (side, rate) in [("rich", metric.rich), ("plain", metric.plain)] {
                    #expect(row.attributes["\(side)-successes"] == String(rate.successes), "\(label) \(side)")
                    #expect(row.attributes["\(side)-trials"] == String(rate.trials), "\(label) \(side)")
                    for (field, value) in [("rate", rate.rate), ("lower", rate.lower), ("upper", rate.upper)] {
                        #expect(PageRows.same(row.attributes["\(side)-\(field)"], value), "\(label) \(side) \(field)")
                    }
                }
                let lifts: [(String, Double?)] = [
                    ("absolute-lift", metric.absolute_lift), ("absolute-lower", metric.absolute_lower),
                    ("absolute-upper", metric.absolute_upper), ("relative-lift", metric.relative_lift),
                    ("relative-lower", metric.relative_lower), ("relative-upper", metric.relative_upper), ("p-value", metric.p_value),
                ]
                for (attribute, value) in lifts {
                    #expect(PageRows.same(row.attributes[attribute], value), "\(label) \(attribute)")
                }
                // What a reader sees: the same numbers, rounded as engage report rounds them.
                #expect(row.cells[1] == PageRows.rateText(metric.rich), "\(label): \(row.cells[1])")
                #expect(row.cells[2] == PageRows.rateText(metric.plain), "\(label): \(row.cells[2])")
                #expect(row.cells[5] == ReportText.pValue(metric.p_value), "\(label) p")
            }
        }
        #expect(rows.count == expected)
        #expect(expected > 20)
    }

    static func compareTelemetry(_ html: String, with report: EngageReportJSON) throws {
        let rows = PageRows.rows(html, marker: "data-delivered")
        let summaries = report.telemetry_by_attachment + report.telemetry + [report.telemetry_total]
        #expect(rows.count == summaries.count)
        for summary in summaries {
            let (category, kind) = (summary.category ?? "", summary.attachment_kind ?? "")
            let row = try #require(rows.first { $0.attributes["category"] == category && $0.attributes["attachment"] == kind })
            #expect(row.attributes["delivered"] == String(summary.delivered))
            #expect(row.attributes["attached"] == String(summary.outcomes["attached"]?.count ?? -1))
            #expect(row.attributes["timeout"] == String(summary.outcomes["timeout"]?.count ?? -1))
            #expect(row.attributes["too-large"] == String(summary.outcomes["too_large"]?.count ?? -1))
            #expect(row.attributes["time-will-expire"] == String(summary.time_will_expire))
            #expect(PageRows.same(row.attributes["cache-hit-rate"], summary.cache_hit_rate))
            #expect(PageRows.same(row.attributes["bytes-mean"], summary.bytes_mean))
        }
    }

    /// The latest look's sample ratio p and lift, against the stored result of the newest run.
    static func compareExperiment(_ html: String, server: TestServer, admin: String) async throws {
        struct Runs: Decodable {
            struct Run: Decodable { var result: Result? }
            struct Result: Decodable {
                struct Ratio: Decodable { var p_value: Double }
                struct Decision: Decodable { var rationale: String }
                struct Arm: Decodable { var arm: String; var metrics: [Metric] }
                struct Metric: Decodable { var metric: String; var relative: Lift? }
                struct Lift: Decodable { var estimate: Double }
                var sample_ratio_mismatch: Ratio
                var decision: Decision
                var intent_to_treat: [Arm]
            }
            var runs: [Run]
        }
        let response = try await server.request("GET", "/v1/experiments/strategy-full-vs-adaptive/runs",
                                                headers: [("Authorization", "Bearer \(admin)")])
        let latest = try #require(try JSONDecoder().decode(Runs.self, from: Data(response.body)).runs.first?.result)
        let p = PageRows.rows(html, marker: "data-srm-p", element: "p").first?.attributes["srm-p"]
        #expect(PageRows.same(p, latest.sample_ratio_mismatch.p_value))
        let looks = PageRows.rows(html, marker: "data-look")
        #expect(looks.map { $0.attributes["look"] } == ["3", "2", "1"])
        let open = latest.intent_to_treat.first?.metrics.first { $0.metric == "open" }
        #expect(PageRows.same(looks.first?.attributes["estimate"], open?.relative?.estimate))
        #expect(html.contains(PageRows.escapeForComparison(latest.decision.rationale)))
    }

    static func compareIngestion(_ html: String, server: TestServer) async throws {
        let metrics = try await server.request("GET", "/metrics").text
        func sample(_ name: String) -> String? {
            metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count + 1)) }
        }
        #expect(html.contains(#"data-total-accepted="\#(sample("engage_events_accepted_total") ?? "?")""#))
        let status400 = #"engage_http_requests_total{route="/v1/events",status="400"}"#
        #expect(html.contains(#"data-status="400" data-count="\#(sample(status400) ?? "?")""#))
        #expect(html.contains(#"data-field="event_id" data-count="1""#) && html.contains(#"data-field="event" data-count="1""#))
        #expect(html.contains(#"data-lag-events="0""#))
    }
}

/// The parts of `engage report --format json` the comparisons read (docs/report.md has it all).
struct EngageReportJSON: Decodable {
    struct Rate: Decodable {
        var successes: Int
        var trials: Int
        var rate: Double?
        var lower: Double?
        var upper: Double?
    }

    struct Metric: Decodable {
        var metric: String
        var rich: Rate
        var plain: Rate
        var absolute_lift: Double?
        var absolute_lower: Double?
        var absolute_upper: Double?
        var relative_lift: Double?
        var relative_lower: Double?
        var relative_upper: Double?
        var p_value: Double?
    }

    struct Group: Decodable {
        var category: String?
        var attachment_kind: String?
        var day: String?
        var metrics: [Metric]
    }

    struct Outcome: Decodable { var count: Int }

    struct Telemetry: Decodable {
        var category: String?
        var attachment_kind: String?
        var delivered: Int
        var outcomes: [String: Outcome]
        var time_will_expire: Int
        var cache_hit_rate: Double?
        var bytes_mean: Double?
    }

    var groups: [Group]
    var total: Group
    var telemetry: [Telemetry]
    var telemetry_by_attachment: [Telemetry]
    var telemetry_total: Telemetry
}

/// Rows of a page's HTML as the browser serialized it: the data attributes and cell texts of each
/// element carrying `marker`.
enum PageRows {
    struct Row {
        var attributes: [String: String]
        var cells: [String]
    }

    static func rows(_ html: String, marker: String, element: String = "tr") -> [Row] {
        let pattern = try! NSRegularExpression(pattern: "<\(element) ([^>]*\(marker)=[^>]*)>(.*?)</\(element)>", options: [.dotMatchesLineSeparators])
        let attribute = try! NSRegularExpression(pattern: #"data-([a-z-]+)="([^"]*)""#)
        let cell = try! NSRegularExpression(pattern: #"<td[^>]*>(.*?)</td>"#, options: [.dotMatchesLineSeparators])
        let text = html as NSString
        return pattern.matches(in: html, range: NSRange(location: 0, length: text.length)).map { match in
            let head = text.substring(with: match.range(at: 1)), body = text.substring(with: match.range(at: 2))
            var attributes: [String: String] = [:]
            for found in attribute.matches(in: head, range: NSRange(location: 0, length: (head as NSString).length)) {
                attributes[(head as NSString).substring(with: found.range(at: 1))] = unescape((head as NSString).substring(with: found.range(at: 2)))
            }
            let cells = cell.matches(in: body, range: NSRange(location: 0, length: (body as NSString).length)).map {
                unescape((body as NSString).substring(with: $0.range(at: 1)))
            }
            return Row(attributes: attributes, cells: cells)
        }
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The attribute holds exactly the JSON number (empty for null).
    static func same(_ attribute: String?, _ value: Double?) -> Bool {
        guard let attribute else { return false }
        guard let value else { return attribute.isEmpty }
        return Double(attribute) == value
    }

    /// `30.8% [25.5–36.6]` from a JSON rate, as engage report prints it.
    static func rateText(_ rate: EngageReportJSON.Rate) -> String {
        guard let value = rate.rate, let lower = rate.lower, let upper = rate.upper else { return ReportText.missing }
        return ReportText.percent(value) + " [" + ReportText.fixed(lower * 100, 1) + "–" + ReportText.fixed(upper * 100, 1) + "]"
    }

    /// Text as the browser serializes it inside an element.
    static func escapeForComparison(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
