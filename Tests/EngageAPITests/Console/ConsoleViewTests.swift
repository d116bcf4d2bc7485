import Digest
import EngageConsole
import EngageCore
import Foundation
import Testing

/// The console's pages as pure functions of their models: escaping, the stylesheet its CSP names,
/// no script and no style attribute anywhere, data attributes that are the model's numbers.
@Suite struct ConsoleViewTests {
    static let viewer = ConsoleViewer(apps: [.init(id: "app", canAdminister: true)], app: .init(id: "app", canAdminister: true),
                                      formToken: "token")
    static let hostile = #"<script>alert("x")</script>'&"#
    static let day = UTCDay(year: 2026, month: 11, day: 27)!

    static func report(grouping: ReportGrouping = .category, category: String = "news") -> EngagementReport {
        let rows = [
            EngagementRow(appID: "app", category: category, presentation: .rich, attachmentKind: "image", day: day,
                          counts: FunnelCounts([.notifications: 150, .delivered: 145, .displayed: 140, .expanded: 50, .actioned: 20,
                                                .opened: 30, .dismissed: 50, .replied: 3])),
            EngagementRow(appID: "app", category: category, presentation: .plain, attachmentKind: "none", day: day,
                          counts: FunnelCounts([.notifications: 170, .delivered: 165, .displayed: 160, .expanded: 28, .actioned: 15,
                                                .opened: 25, .dismissed: 80, .replied: 0])),
            EngagementRow(appID: "app", category: "promo", presentation: .rich, attachmentKind: "video", day: day,
                          counts: FunnelCounts([.notifications: 22, .delivered: 21, .displayed: 20, .expanded: 3, .opened: 2, .dismissed: 10])),
        ]
        let actions = [ActionCountRow(appID: "app", category: category, presentation: .rich, attachmentKind: "image", day: day,
                                      actionID: "save", count: 12)]
        let telemetry = [TelemetryRow(appID: "app", category: category, attachmentKind: "image", day: day, delivered: 200,
                                      outcomes: [.attached: 180, .timeout: 12, .tooLarge: 8], timeWillExpire: 12, cacheHits: 60,
                                      networkFetches: 140, bytes: 36_000_000, bytesReported: 180)]
        return EngagementReport.build(engagement: rows, actions: actions, telemetry: telemetry, grouping: grouping,
                                      generatedAt: Timestamp(microsecondsSinceEpoch: 1_796_000_000_000_000))
    }

    static func pages(category: String = "news") -> [String] {
        var pages = ReportGrouping.allCases.map { grouping in
            ReportView(report: report(grouping: grouping, category: category), query: .init(category: category, grouping: grouping),
                       categories: [category, "promo"], viewer: viewer).page().render()
        }
        pages.append(TelemetryView(report: report(category: category), query: .init(), categories: [category], viewer: viewer).page().render())
        pages.append(LoginView(next: "/console/report", loginToken: "t", message: hostile).page().render())
        pages.append(ProblemView(title: hostile, detail: hostile, viewer: viewer).page().render())
        return pages
    }

    @Test func theProjectorPanelShowsTheLagAsMetricsDefineIt() {
        let health = IngestionHealth(
            rates: [], acceptedHistory: [], sampleSeconds: 5, accepted: 0, duplicates: 0, rejected: 0, requestsByStatus: [],
            rejectedByField: [], queueEvents: 0, poolInUse: 0, poolWaiting: 0, connectionsOpen: 0,
            projector: .init(activeHere: nil, eventsProcessed: 1_000, checkpointUpdatedAt: nil, lagEvents: 42, lagSeconds: 3.5))
        let body = HealthView(health: health, viewer: Self.viewer).page().body
        #expect(body.contains(#"data-lag-events="42""#))
        #expect(body.contains(#"data-lag-seconds="3.5""#))
        #expect(body.contains("engage_projector_lag_seconds"))
    }

    @Test func textFromTheDataIsEscapedEverywhere() {
        for page in Self.pages(category: Self.hostile) {
            #expect(!page.contains("<script"), "\(page.prefix(200))")
            #expect(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;"))
        }
    }

    /// The policy names the stylesheet by its hash; a page with a style attribute or a script
    /// would break in the browser (ConsoleBrowserTests sees that happen).
    @Test func pagesCarryOnlyTheStylesheetTheirPolicyAllows() throws {
        let policy = ConsolePage.contentSecurityPolicy
        for page in Self.pages() {
            let style = try #require(page.range(of: "<style>").flatMap { start in
                page.range(of: "</style>").map { String(page[start.upperBound..<$0.lowerBound]) }
            })
            let hash = "sha256-" + Data(SHA256.hash(Array(style.utf8))).base64EncodedString()
            #expect(policy.contains("style-src '\(hash)'"))
            #expect(page.components(separatedBy: "<style>").count == 2)
            #expect(!page.contains(" style=\""))
            #expect(!page.contains("<script"))
            #expect(page.contains(#"<link rel="icon" href="data:,">"#), "no request for /favicon.ico")
        }
        #expect(policy.contains("default-src 'none'") && policy.contains("form-action 'self'") && policy.contains("frame-ancestors 'none'"))
    }

    /// A read model a minute or more behind is said so above the adjusted answer.
    @Test func aReadModelFarBehindIsSaidAboveTheAnswer() {
        var report = Self.report()
        report.currentAsOf = ReportFreshness(checkpointAt: nil, lagEvents: 12, lagSeconds: 600)
        let page = ReportView(report: report, query: .init(), categories: [], viewer: Self.viewer).page().render()
        #expect(page.contains("Adjusted for category</h2><p class=\"notice error\">NOT CURRENT: 12 events of the log are not in "
            + "these figures, the oldest recorded 10 minutes ago: the projector is behind or stopped.</p><ul>"))
        report.currentAsOf = ReportFreshness(checkpointAt: nil, lagEvents: 12, lagSeconds: 2)
        #expect(!ReportView(report: report, query: .init(), categories: [], viewer: Self.viewer).page().render().contains("NOT CURRENT"))
    }

    /// Each metric row carries the model's own numbers, for every grouping.
    /// A stored displayed count at the largest integer beside another (a hand edit) renders; the
    /// page's "nothing displayed" check added them and trapped.
    @Test func aDisplayedCountAtTheLargestIntegerRenders() {
        let rows = [
            EngagementRow(appID: "app", category: "news", presentation: .rich, attachmentKind: "image", day: Self.day,
                          counts: FunnelCounts([.notifications: .max, .delivered: .max, .displayed: .max, .expanded: 7])),
            EngagementRow(appID: "app", category: "news", presentation: .plain, attachmentKind: "none", day: Self.day,
                          counts: FunnelCounts([.notifications: 3, .delivered: 3, .displayed: 3, .expanded: 1])),
        ]
        let report = EngagementReport.build(engagement: rows, actions: [], telemetry: [], grouping: .category,
                                            generatedAt: Timestamp(microsecondsSinceEpoch: 1_796_000_000_000_000))
        let page = ReportView(report: report, query: .init(), categories: [], viewer: Self.viewer).page().render()
        #expect(page.contains("data-category=\"news\""))
    }

    /// Categories that differ only in punctuation or beyond ASCII get sections of their own, and
    /// each overview link leads to its group's section.
    @Test(arguments: [ReportGrouping.category, .attachment, .day])
    func everyGroupHasASectionIDOfItsOwn(grouping: ReportGrouping) throws {
        let counts = FunnelCounts([.notifications: 10, .delivered: 10, .displayed: 9, .expanded: 2, .opened: 1])
        let rows = ["promo!", "promo?", "promo_3f", "café", "cafe\u{301}x", "g-promo"].flatMap { category in
            [ObservedPresentation.rich, .plain].map {
                EngagementRow(appID: "app", category: category, presentation: $0, attachmentKind: $0 == .rich ? "image" : "none",
                              day: Self.day, counts: counts)
            }
        }
        let report = EngagementReport.build(engagement: rows, actions: [], telemetry: [], grouping: grouping,
                                            generatedAt: Timestamp(microsecondsSinceEpoch: 1_796_000_000_000_000))
        let page = ReportView(report: report, query: .init(grouping: grouping), categories: [], viewer: Self.viewer).page().render()
        func values(after marker: String) -> [String] {
            page.components(separatedBy: marker).dropFirst().map { String($0.prefix { $0 != "\"" }) }
        }
        let sectionIDs = values(after: "<section class=\"card\" id=\"").filter { $0 != "adjusted" }
        let links = values(after: "href=\"#")
        #expect(sectionIDs.count == report.groups.count + 1)
        #expect(Set(sectionIDs).count == sectionIDs.count, "\(sectionIDs)")
        #expect(links.count == sectionIDs.count && Set(links) == Set(sectionIDs))
        #expect(sectionIDs.allSatisfy { $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") } })
    }

    @Test(arguments: ReportGrouping.allCases)
    func metricRowsCarryTheModelsNumbers(grouping: ReportGrouping) {
        let report = Self.report(grouping: grouping)
        let page = ReportView(report: report, query: .init(grouping: grouping), categories: [], viewer: Self.viewer).page().render()
        for group in report.groups + [report.total] {
            for metric in group.metrics {
                let row = #"<tr data-category="\#(group.key.category ?? "")" data-attachment="\#(group.key.attachmentKind ?? "")" "#
                    + #"data-day="\#(group.key.day?.description ?? "")" data-metric="\#(metric.metric.key)" "#
                    + #"data-rich-successes="\#(metric.rich.successes)" data-rich-trials="\#(metric.rich.trials)" "#
                    + #"data-rich-rate="\#(metric.rich.rate.map { $0.description } ?? "")""#
                #expect(page.contains(row), "\(group.key.label) \(metric.metric.key)")
            }
        }
        if grouping == .action {
            #expect(page.contains(#"data-metric="action:save""#))
        }
        // The adjusted answer comes first, each metric's sentence as the report words it.
        #expect(page.range(of: "Adjusted for category</h2>")!.lowerBound < page.range(of: "id=\"total\"")!.lowerBound)
        for summary in report.stratified {
            #expect(page.contains("<li data-metric=\"\(summary.metric.key)\">\(ReportText.html(summary.headline))</li>"),
                    "\(summary.metric.key)")
        }
    }

    @Test func consolePathsStayOnTheConsole() {
        for local in ["/", "/console", "/console/report?app=a&by=day", "/console/experiments/x%2Fy", "/console?app=a"] {
            #expect(ConsolePath.isLocal(local), "\(local)")
        }
        for away in ["//evil.example", "https://evil.example/console/", "/console/../v1/report", "/console/%2e%2E/x", "/console/./x",
                     "/v1/report", "/console/\\evil", "javascript:alert(1)", "/console/a b", "/consolex"] {
            #expect(!ConsolePath.isLocal(away), "\(away)")
        }
        #expect(ConsolePath.with("/console/report", [("app", "a b/ü"), ("category", nil), ("by", "day")])
                == "/console/report?app=a%20b%2F%C3%BC&by=day")
        #expect(ConsolePath.experiment("a/b") == "/console/experiments/a%2Fb")
        // After a fragment the browser would never send the query: it goes before it.
        #expect(ConsolePath.with("/console/report#x", [("app", "a")]) == "/console/report?app=a#x")
        #expect(ConsolePath.with("/console/report?by=day#x", [("app", "a")]) == "/console/report?by=day&app=a#x")
        #expect(!ConsolePath.hasParameter("app", in: "/console/report#?app=a"))
        #expect(ConsolePath.hasParameter("app", in: "/console/report?app=a#x"))
    }

    /// A group with nothing displayed has no interval to scale by: its axis is still 0 to 100%,
    /// never -50% to +50%; and ticks a hundredth of a percent apart say so, not all "0.0%".
    @Test func rateAxesReadAsRates() throws {
        let rows = [
            EngagementRow(appID: "app", category: "news", presentation: .rich, attachmentKind: "image", day: Self.day,
                          counts: FunnelCounts([.notifications: 10, .delivered: 10, .displayed: 10, .opened: 3])),
            EngagementRow(appID: "app", category: "news", presentation: .plain, attachmentKind: "none", day: Self.day,
                          counts: FunnelCounts([.notifications: 10, .delivered: 10, .displayed: 10, .opened: 2])),
            EngagementRow(appID: "app", category: "unseen", presentation: .rich, attachmentKind: "image", day: Self.day,
                          counts: FunnelCounts([.notifications: 5, .delivered: 5])),
            EngagementRow(appID: "app", category: "unseen", presentation: .plain, attachmentKind: "none", day: Self.day,
                          counts: FunnelCounts([.notifications: 5, .delivered: 5])),
        ]
        let report = EngagementReport.build(engagement: rows, generatedAt: Timestamp(microsecondsSinceEpoch: 1_796_000_000_000_000))
        let page = ReportView(report: report, query: .init(), categories: [], viewer: Self.viewer).page().render()
        #expect(page.contains("Rates of unseen"))
        #expect(!page.contains(">-50%<") && !page.contains(">-25%<") && page.contains(">100%<"))
        let scale = ChartScale(covering: [0.0004], including: [0], ticks: 4)
        let labels = scale.ticks.map { scale.label($0, times: 100) }
        #expect(Set(labels).count == labels.count, "\(labels)")
        #expect(labels.last == "0.04", "\(labels)")
    }

    @Test func storedResultsThatCannotBeReadAreNoLook() {
        let at = Timestamp(microsecondsSinceEpoch: 0)
        #expect(ExperimentLook(runID: 1, scheduledFor: at, result: Array("not json".utf8)) == nil)
        #expect(ExperimentLook(runID: 1, scheduledFor: at, result: Array(#"{"look":1}"#.utf8)) == nil)
        let minimal = ExperimentLook(runID: 1, scheduledFor: at, result: Array(#"{"look":2,"decision":{"code":"continue","arm":null,"reason":null,"rationale":"r"}}"#.utf8))
        #expect(minimal?.look == 2 && minimal?.decisionText == "continue" && minimal?.comparisons.isEmpty == true)
        let shipped = ExperimentLook(runID: 1, scheduledFor: at, result: Array(#"{"look":3,"decision":{"code":"ship","arm":"treatment","reason":null,"rationale":"r"}}"#.utf8))
        #expect(shipped?.decisionText == "ship treatment")
    }

    /// A guardrail no test could read, on its forbidden side, is read as blocking, not as passed.
    @Test func aGuardrailUntestedAndWorseIsReadAsSuch() throws {
        let metric = #"{"metric":"dismiss","role":"guardrail","direction":"must_not_increase","unavailable":"zero_baseline","#
            + #""guardrail_violated":false,"guardrail_untested_and_worse":true}"#
        let result = #"{"look":1,"decision":{"code":"continue","arm":null,"reason":null,"rationale":"r"},"#
            + #""intent_to_treat":[{"arm":"treatment","metrics":[\#(metric)]}]}"#
        let look = try #require(ExperimentLook(runID: 1, scheduledFor: Timestamp(microsecondsSinceEpoch: 0), result: Array(result.utf8)))
        let comparison = try #require(look.comparisons.first)
        #expect(comparison.guardrailUntestedAndWorse && !comparison.guardrailViolated)
    }
}
