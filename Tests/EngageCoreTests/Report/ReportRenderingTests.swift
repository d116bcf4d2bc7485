import Testing
@testable import EngageCore

@Suite struct ReportRenderingTests {
    static let report = EngagementReportTests.report()

    /// The text with every run of whitespace as one space.
    static func collapsed(_ text: String) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" }).joined(separator: " ")
    }

    // MARK: JSON

    @Test func jsonParsesAndHoldsTheNumbers() throws {
        let json = try JSON.parse(Self.report.renderJSON())
        let root = json.root
        func member(_ node: JSON.Node, _ key: StaticString) throws -> JSON.Node { try #require(json.member(node, key)) }
        func element(_ node: JSON.Node, _ index: Int) throws -> JSON.Node {
            try #require(Array(json.elements(node)).dropFirst(index).first)
        }

        #expect(json.string(try member(root, "generated_at")) == "2026-11-29T20:00:00Z")
        #expect(json.string(try member(root, "grouping")) == "category")
        #expect(json.string(try member(root, "caveat")) == EngagementReport.caveat)
        #expect(json.double(try member(root, "confidence")) == 0.95)
        #expect(json.isNull(try member(try member(root, "filters"), "from")))

        let groups = try member(root, "groups")
        #expect(json.count(groups) == 2)
        let news = try element(groups, 0)
        #expect(json.string(try member(news, "category")) == "news")
        #expect(json.isNull(try member(news, "day")))
        #expect(json.int64(try member(try member(news, "rich"), "displayed")) == 263)
        #expect(json.int64(try member(try member(news, "not_displayed"), "notifications")) == 20)

        let expansion = try element(try member(news, "metrics"), 0)
        let metric = try EngagementReportTests.metric(Self.report.groups[0], .expansion)
        #expect(json.string(try member(expansion, "metric")) == "expansion")
        #expect(json.int64(try member(try member(expansion, "rich"), "successes")) == 81)
        #expect(json.double(try member(try member(expansion, "rich"), "rate")) == 81.0 / 263.0)
        #expect(json.double(try member(try member(expansion, "plain"), "lower")) == metric.plain.interval?.lower)
        #expect(json.double(try member(expansion, "absolute_upper")) == metric.absoluteInterval?.upper)
        #expect(json.double(try member(expansion, "relative_lift")) == metric.relativeLift)
        #expect(json.double(try member(expansion, "p_value")) == metric.pValue)
        #expect(json.bool(try member(expansion, "significant")) == true)
        #expect(json.bool(try member(expansion, "small_sample")) == false)

        let reply = try element(try member(news, "metrics"), 4)
        #expect(json.string(try member(reply, "metric")) == "reply")
        #expect(json.isNull(try member(reply, "relative_lift")))
        #expect(json.isNull(try member(reply, "relative_lower")))

        let promoExpansion = try element(try member(try element(groups, 1), "metrics"), 0)
        #expect(json.isNull(try member(try member(promoExpansion, "plain"), "rate")))
        #expect(json.isNull(try member(promoExpansion, "p_value")))
        #expect(json.isNull(try member(promoExpansion, "significant")))
        #expect(json.bool(try member(promoExpansion, "small_sample")) == true)

        let total = try member(root, "total")
        #expect(json.isNull(try member(total, "category")))
        #expect(json.int64(try member(try member(total, "rich"), "displayed")) == 283)

        let image = try element(try member(root, "telemetry"), 0)
        #expect(json.string(try member(image, "attachment_kind")) == "image")
        let timeout = try member(try member(image, "outcomes"), "timeout")
        #expect(json.int64(try member(timeout, "count")) == 12)
        #expect(json.double(try member(timeout, "share")) == 0.04)
        #expect(json.double(try member(image, "cache_hit_rate")) == 100.0 / 300.0)
        #expect(json.int64(try member(image, "bytes_total")) == 56_000_000)
        #expect(json.double(try member(try member(image, "download_ms"), "p50"))
                == Self.report.telemetry[0].download.p50)
        let none = try element(try member(root, "telemetry"), 1)
        #expect(json.isNull(try member(try member(none, "download_ms"), "p95")))
        #expect(json.isNull(try member(none, "bytes_mean")))
        #expect(json.int64(try member(try member(root, "telemetry_total"), "delivered")) == 471)
    }

    @Test func jsonKeysAreStableAndFiltersListed() throws {
        let filtered = EngagementReportTests.report(.action, filters: ReportFilters(
            appIDs: ["zz", "app"], attachmentKinds: ["none", "image"], through: ReportFixture.day2))
        let json = try JSON.parse(filtered.renderJSON())
        let filters = try #require(json.member(json.root, "filters"))
        #expect(Array(json.members(filters)).map { json.string($0.key) ?? "" }
                == ["app_ids", "categories", "attachment_kinds", "from", "through"])
        #expect(json.elements(try #require(json.member(filters, "app_ids"))).map { json.string($0) } == ["app", "zz"])
        #expect(json.elements(try #require(json.member(filters, "attachment_kinds"))).map { json.string($0) }
                == ["image", "none"])
        #expect(json.string(try #require(json.member(filters, "through"))) == "2026-11-28")
        #expect(Array(json.members(json.root)).map { json.string($0.key) ?? "" } == [
            "report", "version", "generated_at", "current_as_of", "grouping", "filters", "confidence", "alpha", "rate_denominator",
            "caveat", "note", "groups", "total", "telemetry", "telemetry_by_attachment", "telemetry_total",
            "stratified_note", "stratified",
        ])
        let text = String(decoding: filtered.renderJSON(), as: UTF8.self)
        #expect(text.contains("\"metric\":\"action:save\""))
        #expect(!text.contains("nan") && !text.contains("inf"))
    }

    // MARK: CSV

    /// An RFC 4180 reader for the tests: records of fields.
    static func parseCSV(_ text: String) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var quoted = false
        var characters = Array(text.unicodeScalars)[...]
        while let c = characters.popFirst() {
            if quoted {
                if c == "\"" {
                    if characters.first == "\"" { field.unicodeScalars.append(c); characters.removeFirst() } else { quoted = false }
                } else {
                    field.unicodeScalars.append(c)
                }
            } else if c == "\"" {
                quoted = true
            } else if c == "," {
                record.append(field); field = ""
            } else if c == "\r" && characters.first == "\n" {
                characters.removeFirst()
                record.append(field); field = ""
                records.append(record); record = []
            } else {
                field.unicodeScalars.append(c)
            }
        }
        return records
    }

    @Test func csvQuotesCommasAndQuotes() throws {
        let category = "say \"hi\", now"
        let report = EngagementReport.build(engagement: [
            ReportFixture.engagement(category, .rich, "image", notifications: 10, delivered: 10, displayed: 10, opened: 4),
            ReportFixture.engagement(category, .plain, "none", notifications: 10, delivered: 10, displayed: 10, opened: 2),
        ], generatedAt: ReportFixture.generatedAt)
        let csv = report.renderCSV()
        #expect(csv.contains("\r\ngroup,\"say \"\"hi\"\", now\",,,open,4,10,0.4,"))
        let records = Self.parseCSV(csv)
        #expect(records.allSatisfy { $0.count == EngagementReport.csvHeader.count })
        let open = try #require(records.first { $0[0] == "group" && $0[4] == "open" })
        #expect(open[1] == category)
        #expect(Array(open[5...10]) == ["4", "10", "0.4", open[8], open[9], "2"])
        #expect(open[16] == String(0.2))
        #expect(open[19] == String(1.0))
        #expect(open[24] == "true")
    }

    /// Ten rich and ten plain displays of `category`, 4 and 2 opened.
    static func oneCategory(_ category: String) -> EngagementReport {
        EngagementReport.build(engagement: [
            ReportFixture.engagement(category, .rich, "image", notifications: 10, delivered: 10, displayed: 10, opened: 4),
            ReportFixture.engagement(category, .plain, "none", notifications: 10, delivered: 10, displayed: 10, opened: 2),
        ], generatedAt: ReportFixture.generatedAt)
    }

    /// A category a spreadsheet would take for a formula (an ingest key may send any text) is
    /// written with a leading `'`; negative numbers stay numbers.
    @Test func csvDefusesCategoriesThatLookLikeFormulas() throws {
        for category in ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd", "-2-3", "@SUM(A1)", "\tsneak"] {
            let report = Self.oneCategory(category)
            let records = Self.parseCSV(report.renderCSV())
            let rows = records.filter { $0[0] == "group" }
            #expect(!rows.isEmpty)
            #expect(rows.allSatisfy { $0[1] == "'" + category }, "\(rows.map { $0[1] })")
            #expect(records.allSatisfy { $0.allSatisfy { !CSVWriter.startsLikeAFormula($0) } })
        }
        #expect(CSVWriter.field("-0.25") == "-0.25")
        #expect(CSVWriter.field("+5") == "+5")
        #expect(CSVWriter.field("=1,2") == "\"'=1,2\"")
    }

    /// A quote followed by a combining mark (U+0301) is one Swift `Character`, equal to no quote:
    /// matched as characters it was left raw, ending the CSV field (a new cell `=1+1`, every later
    /// column shifted) and the HTML attribute it stood in (an event handler in the chart's label).
    @Test func aQuoteWithACombiningMarkIsEscapedToo() throws {
        let csvCategory = "a\"\u{301},=1+1&\"\u{301}"
        let htmlCategory = "x\"\u{301} onmouseover=alert(1) a="
        for category in [csvCategory, htmlCategory] {
            let report = Self.oneCategory(category)
            let records = Self.parseCSV(report.renderCSV())
            let rows = records.filter { $0[0] == "group" }
            #expect(!rows.isEmpty)
            #expect(rows.allSatisfy { Array($0[1].unicodeScalars) == Array(category.unicodeScalars) && $0.count == records[0].count },
                    "\(rows.map { $0.prefix(3) })")
            let html = Array(report.renderHTML().unicodeScalars)
            let rawQuoteBeforeMark = zip(html, html.dropFirst()).contains { $0 == "\"" && $1 == "\u{301}" }
            #expect(!rawQuoteBeforeMark)
        }
        #expect(Array(HTMLText.escape("\"\u{301}'\u{301}<\u{338}").unicodeScalars)
                == Array("&quot;\u{301}&#39;\u{301}&lt;\u{338}".unicodeScalars))
    }

    @Test func csvHasOneRowPerGroupAndMetric() throws {
        let records = Self.parseCSV(Self.report.renderCSV())
        #expect(records[0] == EngagementReport.csvHeader)
        let comparisons = records.filter { $0[0] == "group" }
        #expect(comparisons.map { "\($0[1])/\($0[4])" } == [
            "news/expansion", "news/action", "news/open", "news/dismiss", "news/reply",
            "promo/expansion", "promo/action", "promo/open", "promo/dismiss", "promo/reply",
        ])
        let promo = comparisons[5]
        #expect(promo[5] == "3" && promo[6] == "20" && promo[7] == "0.15")
        #expect(promo[12] == "" && promo[16] == "" && promo[22] == "" && promo[23] == "" && promo[24] == "true")
        #expect(records.filter { $0[0] == "total" }.count == 5)
        let displayed = try #require(records.first { $0[0] == "counts" && $0[1] == "news" && $0[4] == "displayed" })
        #expect(displayed[5] == "263" && displayed[10] == "300" && displayed[15] == "0")
        let cache = try #require(records.first { $0[0] == "telemetry" && $0[1] == "news" && $0[2] == "image"
            && $0[4] == "cache_hit_rate" })
        #expect(cache[25] == String(100.0 / 300.0))
        let timeout = try #require(records.first { $0[0] == "telemetry_total" && $0[4] == "outcome:timeout" })
        #expect(timeout[25] == "12")
    }

    // MARK: HTML

    @Test func htmlIsSelfContainedBalancedAndEscaped() {
        let category = "<script>alert(\"x\")</script> & co"
        let report = EngagementReport.build(engagement: ReportFixture.engagementRows + [
            ReportFixture.engagement(category, .rich, "image", notifications: 40, delivered: 40, displayed: 40, opened: 9),
            ReportFixture.engagement(category, .plain, "none", notifications: 40, delivered: 40, displayed: 40, opened: 5),
        ], telemetry: ReportFixture.telemetryRows + [
            TelemetryRow(appID: "app", category: category, attachmentKind: "image", day: ReportFixture.day1,
                         delivered: 40, outcomes: [.attached: 40]),
        ], filters: ReportFilters(categories: [category, "news", "promo"]), generatedAt: ReportFixture.generatedAt)
        let html = report.renderHTML()
        func occurrences(_ needle: String) -> Int { html.components(separatedBy: needle).count - 1 }

        #expect(html.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">"))
        #expect(html.hasSuffix("</body>\n</html>\n"))
        #expect(!html.contains("<script") && !html.contains("src=") && !html.contains("http:")
                && !html.contains("https:") && !html.contains("<link") && !html.contains("@import"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co"))
        // One section per group plus the total, the overview and the extension, then the adjusted
        // answer's; two charts per group, outcomes and latency, and a forest plot per metric.
        #expect(occurrences("<section>") == 4 + 2)
        #expect(occurrences("<section class=\"adjusted\">") == 1)
        #expect(occurrences("<section") == occurrences("</section>"))
        #expect(occurrences("<svg ") == 4 * 2 + 2 + ReportMetric.standard.count)
        #expect(occurrences("<svg ") == occurrences("</svg>"))
        for tag in ["table", "text", "title", "details", "aside", "tr", "td"] {
            #expect(occurrences("<\(tag)>") + occurrences("<\(tag) ") == occurrences("</\(tag)>"), "\(tag)")
        }
        #expect(html.contains("<dt>Generated</dt><dd>2026-11-29T20:00:00Z</dd>"))
        #expect(html.contains("categories: &lt;script&gt;"))
        #expect(!html.contains("nan") && !html.contains("NaN"))
    }

    @Test func htmlShowsTheChartsContent() {
        let html = Self.report.renderHTML()
        #expect(html.contains("<h2>news</h2>"))
        #expect(html.contains("aria-label=\"Rates of news, rich and plain\""))
        #expect(html.contains("aria-label=\"Funnel of news\""))
        #expect(html.contains("<title>rich expansion: 81 of 263 displayed, 30.8% [25.5–36.6]</title>"))
        #expect(html.contains(">+14.8 pp [+7.8, +21.7] · p &lt;0.001</text>"))
        #expect(html.contains("<title>news · image timeout: 12 (4.0%)</title>"))
        #expect(html.contains("Download and processing latency"))
    }

    // MARK: Caveat

    @Test func everyFormatCarriesTheCaveat() throws {
        for grouping in ReportGrouping.allCases {
            let report = EngagementReportTests.report(grouping)
            #expect(Self.collapsed(report.renderTable()).contains(EngagementReport.caveat))
            let json = try JSON.parse(report.renderJSON())
            #expect(json.string(try #require(json.member(json.root, "caveat"))) == EngagementReport.caveat)
            let caveatRecord = Self.parseCSV(report.renderCSV()).first { $0[0] == "meta" && $0[4] == "caveat" }
            #expect(caveatRecord?[EngagementReport.csvHeader.firstIndex(of: "value")!] == EngagementReport.caveat)
            #expect(report.renderHTML().contains("<aside class=\"caveat\" role=\"note\"><strong>Read this first.</strong> "
                + HTMLText.escape(EngagementReport.caveat) + "</aside>"))
        }
    }
}
