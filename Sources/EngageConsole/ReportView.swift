import EngageCore

/// The report page: rich versus plain per group, from the `EngagementReport` that `engage report`
/// renders, with the filters that made it.
public struct ReportView: Sendable {
    /// What the reader asked for, as the page's filter form shows it.
    public struct Query: Sendable, Equatable {
        public var category: String?
        public var since: UTCDay?
        public var until: UTCDay?
        public var grouping: ReportGrouping

        public init(category: String? = nil, since: UTCDay? = nil, until: UTCDay? = nil, grouping: ReportGrouping = .category) {
            self.category = category
            self.since = since
            self.until = until
            self.grouping = grouping
        }

        var items: [(String, String?)] {
            [("category", category), ("since", since?.description), ("until", until?.description),
             ("by", grouping == .category ? nil : grouping.rawValue)]
        }
    }

    public var report: EngagementReport
    public var query: Query
    /// The app's categories, for the filter's choices.
    public var categories: [String]
    public var viewer: ConsoleViewer

    public init(report: EngagementReport, query: Query, categories: [String], viewer: ConsoleViewer) {
        self.report = report
        self.query = query
        self.categories = categories
        self.viewer = viewer
    }

    /// Groups past this many are shown folded.
    static let unfoldedGroups = 8

    public func page(notice: ConsolePage.Notice? = nil) -> ConsolePage {
        var html = "<h1>Rich versus plain</h1>"
        html += ReportFilterForm(action: ConsolePath.report, query: query, categories: categories, viewer: viewer,
                                 groupings: true).markup
        let currentAsOf = report.currentAsOf.map { " · current as of \(Markup.text($0.summary))" } ?? ""
        html += "<p class=\"small muted\">Generated \(Markup.text(report.generatedAt.rfc3339))\(currentAsOf) · grouped by "
            + "\(Markup.text(report.grouping.rawValue)) · rates per displayed notification with 95% intervals</p>"
        html += "<aside class=\"caveat\" role=\"note\"><strong>Read this first.</strong> \(Markup.text(EngagementReport.caveat))</aside>"
        if report.total.rich[.displayed] == 0 && report.total.plain[.displayed] == 0 {
            html += "<section class=\"card\"><p>No displayed notifications match these filters yet.</p></section>"
            return ConsolePage(title: "Report", section: .report, viewer: viewer, notice: notice, body: html)
        }
        html += adjustedSection()
        html += totalSection()
        html += overview()
        for (index, group) in report.groups.enumerated() {
            html += groupSection(group, folded: index >= Self.unfoldedGroups)
        }
        html += "<p class=\"small muted\">\(Markup.text(EngagementReport.denominatorNote))</p>"
        return ConsolePage(title: "Report", section: .report, viewer: viewer, notice: notice, body: html)
    }

    /// The headline: per metric, rich against plain within each category combined, in the
    /// report's own words (and the crude total's disagreement when there is one).
    private func adjustedSection() -> String {
        var html = "<section class=\"card\" id=\"adjusted\"><h2>Adjusted for category</h2>"
        if let warning = report.currentAsOf?.headlineWarning { html += "<p class=\"notice error\">\(Markup.text(warning))</p>" }
        html += "<ul>"
        for summary in report.stratified {
            html += "<li data-metric=\"\(Markup.text(summary.metric.key))\">\(Markup.text(summary.headline))</li>"
        }
        return html + "</ul><p class=\"small muted\">\(Markup.text(EngagementReport.stratifiedNote))</p></section>"
    }

    /// Every category together: one sentence per metric, then the same table as each group's.
    private func totalSection() -> String {
        let total = report.total
        var html = "<section class=\"card\" id=\"total\"><h2>All categories</h2>"
        html += "<p class=\"small muted\">Crude: the notifications of every category pooled, not adjusted for the "
            + "categories' different mix of rich and plain.</p><ul>"
        for metric in total.metrics {
            html += "<li>\(Markup.text(Self.sentence(metric)))</li>"
        }
        html += "</ul>" + Self.counts(total) + Self.legend
        html += RatesChart(title: "Rates of all categories, rich and plain, 95% intervals", metrics: total.metrics).markup
        html += Self.metricTable(total)
        return html + "</section>"
    }

    /// Rows of groups, columns of metrics: each cell rich − plain, coloured when significant.
    private func overview() -> String {
        let metrics = report.grouping == .action ? report.total.metrics.map(\.metric) : ReportMetric.standard
        var html = "<section class=\"card\"><h2>Rich − plain by \(Markup.text(report.grouping.rawValue))</h2><div class=\"scroll\"><table>"
            + "<thead><tr><th>group</th><th>displayed rich</th><th>displayed plain</th>"
        for metric in metrics { html += "<th>\(Markup.text(metric.label))</th>" }
        html += "</tr></thead><tbody>"
        for group in report.groups + [report.total] {
            html += "<tr><td>\(Markup.link("#" + Self.anchor(group.key), group.key.label))</td>"
                + "<td>\(group.rich[.displayed])</td><td>\(group.plain[.displayed])</td>"
            for metric in metrics {
                guard let comparison = group.metrics.first(where: { $0.metric == metric }), let lift = comparison.absoluteLift else {
                    html += "<td class=\"muted\">\(ReportText.missing)</td>"
                    continue
                }
                let style = comparison.significant == true ? (lift > 0 ? " class=\"up\"" : " class=\"down\"") : ""
                html += "<td\(style)>\(Markup.text(ReportText.signed(lift * 100, 1))) pp</td>"
            }
            html += "</tr>"
        }
        return html + "</tbody></table></div><p class=\"small muted\">Coloured: significant at p &lt; 0.05 (the 95% interval of the ratio "
            + "rich ÷ plain leaves out 1).</p></section>"
    }

    private func groupSection(_ group: ReportGroup, folded: Bool) -> String {
        var html = "<section class=\"card\" id=\"\(Self.anchor(group.key))\"><h2>\(Markup.text(group.key.label))</h2>"
        html += Self.counts(group)
        if group.metrics.isEmpty {
            return html + "<p>No actions recorded.</p></section>"
        }
        let body = Self.legend + RatesChart(title: "Rates of \(group.key.label), rich and plain, 95% intervals",
                                            metrics: group.metrics).markup + Self.metricTable(group)
        html += folded ? "<details><summary>Rates and lifts</summary>\(body)</details>" : body
        return html + "</section>"
    }

    static let legend = "<p class=\"small muted\"><span class=\"key rich\"></span>rich<span class=\"key plain\"></span>plain · "
        + "dots are rates, bars their 95% intervals</p>"

    static func counts(_ group: ReportGroup) -> String {
        "<p class=\"small muted\">displayed: rich \(group.rich[.displayed]), plain \(group.plain[.displayed]) · "
            + "delivered: rich \(group.rich[.delivered]), plain \(group.plain[.delivered]) · not displayed: "
            + "\(group.notDisplayed[.notifications])</p>"
    }

    /// One row per metric; its data attributes carry the exact numbers the row shows rounded.
    static func metricTable(_ group: ReportGroup) -> String {
        var html = "<div class=\"scroll\"><table class=\"metrics\"><thead><tr><th>rate</th><th>rich</th><th>plain</th>"
            + "<th>rich − plain</th><th>relative</th><th>p</th><th>flags</th></tr></thead><tbody>"
        for metric in group.metrics {
            let attributes: [(String, String)] = [
                ("category", group.key.category ?? ""), ("attachment", group.key.attachmentKind ?? ""),
                ("day", group.key.day?.description ?? ""), ("metric", metric.metric.key),
                ("rich-successes", String(metric.rich.successes)), ("rich-trials", String(metric.rich.trials)),
                ("rich-rate", Markup.number(metric.rich.rate)), ("rich-lower", Markup.number(metric.rich.interval?.lower)),
                ("rich-upper", Markup.number(metric.rich.interval?.upper)),
                ("plain-successes", String(metric.plain.successes)), ("plain-trials", String(metric.plain.trials)),
                ("plain-rate", Markup.number(metric.plain.rate)), ("plain-lower", Markup.number(metric.plain.interval?.lower)),
                ("plain-upper", Markup.number(metric.plain.interval?.upper)),
                ("absolute-lift", Markup.number(metric.absoluteLift)), ("absolute-lower", Markup.number(metric.absoluteInterval?.lower)),
                ("absolute-upper", Markup.number(metric.absoluteInterval?.upper)),
                ("relative-lift", Markup.number(metric.relativeLift)), ("relative-lower", Markup.number(metric.relativeInterval?.lower)),
                ("relative-upper", Markup.number(metric.relativeInterval?.upper)),
                ("p-value", Markup.number(metric.pValue)), ("significant", metric.significant.map { String($0) } ?? ""),
            ]
            html += "<tr" + attributes.map { " data-\($0.0)=\"\(Markup.text($0.1))\"" }.joined() + ">"
            let style = metric.significant == true ? ((metric.absoluteLift ?? 0) > 0 ? " class=\"up\"" : " class=\"down\"") : ""
            html += "<td>\(Markup.text(metric.metric.label))</td><td>\(Markup.text(ReportText.rate(metric.rich)))</td>"
                + "<td>\(Markup.text(ReportText.rate(metric.plain)))</td>"
                + "<td\(style)>\(Markup.text(ReportText.absoluteLift(metric)))</td>"
                + "<td>\(Markup.text(ReportText.relativeLift(metric)))</td><td>\(Markup.text(ReportText.pValue(metric.pValue)))</td>"
                + "<td>\(Markup.text(ReportText.flags(metric)))</td></tr>"
        }
        return html + "</tbody></table></div>"
    }

    /// "Expanded: rich 16.0% [15.2–16.9] against plain 10.1% [9.3–10.9]; rich − plain +5.9 pp
    /// [+4.8, +7.1], p <0.001."
    static func sentence(_ metric: MetricComparison) -> String {
        var text = "\(metric.metric.label.prefix(1).uppercased() + metric.metric.label.dropFirst()): rich "
            + ReportText.rate(metric.rich) + " against plain " + ReportText.rate(metric.plain)
        guard metric.absoluteLift != nil else { return text + "; no comparison (a side has no displayed notification)." }
        text += "; rich − plain " + ReportText.absoluteLift(metric) + ", p " + ReportText.pValue(metric.pValue)
        if metric.smallSample { text += " (small sample)" }
        return text + "."
    }

    /// The id of a group's section: `g-<category>[-<kind>][-<day>]` with anything unusual replaced.
    /// The group's section id: one per group, however alike two names are (`promo!` and
    /// `promo?` once both became `g-promo_`). Each part is tagged and spelled in ASCII letters and
    /// digits, every other byte as `_` and two hex digits.
    static func anchor(_ key: ReportGroupKey) -> String {
        guard let category = key.category else { return "total" }
        var anchor = "g-c" + spelled(category)
        if let kind = key.attachmentKind { anchor += "-k" + spelled(kind) }
        if let day = key.day { anchor += "-d" + spelled(day.description) }
        return anchor
    }

    private static func spelled(_ part: String) -> String {
        var spelled = ""
        for byte in part.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                spelled.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                spelled += "_" + String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
            }
        }
        return spelled
    }
}

/// The filter form of the report and extension pages: category, days and (for the report) grouping,
/// sent with GET so that a filtered page has a link of its own.
struct ReportFilterForm {
    var action: String
    var query: ReportView.Query
    var categories: [String]
    var viewer: ConsoleViewer
    var groupings: Bool

    var markup: String {
        var html = "<section class=\"card\"><form class=\"filters\" method=\"get\" action=\"\(Markup.text(action))\">"
            + Markup.hidden("app", viewer.app.id)
        html += "<label>category<select name=\"category\"><option value=\"\">all</option>"
        for category in Set(categories + [query.category].compactMap { $0 }).sorted() {
            html += "<option value=\"\(Markup.text(category))\"" + (category == query.category ? " selected" : "") + ">"
                + Markup.text(category) + "</option>"
        }
        html += "</select></label>"
        if groupings {
            html += "<label>group by<select name=\"by\">"
            for grouping in ReportGrouping.allCases {
                html += "<option value=\"\(grouping.rawValue)\"" + (grouping == query.grouping ? " selected" : "") + ">"
                    + grouping.rawValue + "</option>"
            }
            html += "</select></label>"
        }
        html += "<label>since<input type=\"date\" name=\"since\" value=\"\(Markup.text(query.since?.description ?? ""))\"></label>"
        html += "<label>until<input type=\"date\" name=\"until\" value=\"\(Markup.text(query.until?.description ?? ""))\"></label>"
        return html + "<button type=\"submit\">Apply</button></form></section>"
    }
}
