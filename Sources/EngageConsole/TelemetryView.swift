import EngageCore

/// The extension page: what the Notification Service Extension did with each push, from the
/// telemetry of the same `EngagementReport`.
public struct TelemetryView: Sendable {
    public var report: EngagementReport
    public var query: ReportView.Query
    public var categories: [String]
    public var viewer: ConsoleViewer

    public init(report: EngagementReport, query: ReportView.Query, categories: [String], viewer: ConsoleViewer) {
        self.report = report
        self.query = query
        self.categories = categories
        self.viewer = viewer
    }

    public func page() -> ConsolePage {
        var html = "<h1>Notification Service Extension</h1>"
        html += ReportFilterForm(action: ConsolePath.telemetry, query: query, categories: categories, viewer: viewer,
                                 groupings: false).markup
        let total = report.telemetryTotal
        guard total.delivered > 0 || !report.telemetry.isEmpty else {
            return ConsolePage(title: "Extension", section: .telemetry, viewer: viewer,
                               body: html + "<section class=\"card\"><p>No extension telemetry matches these filters yet.</p></section>")
        }
        html += "<section class=\"card\"><h2>All categories and kinds</h2><div class=\"figures\">"
        let figures: [(String, String)] = [
            ("delivered", String(total.delivered)),
            ("attached", ReportText.percent(total.share(of: .attached))),
            ("timed out", ReportText.percent(total.timeoutShare)),
            ("too large", ReportText.percent(total.tooLargeShare)),
            ("time will expire", String(total.timeWillExpire)),
            ("cache hit rate", ReportText.percent(total.cacheHitRate)),
            ("mean attachment", ReportText.bytes(total.meanBytes)),
            ("download p50 / p95", Self.milliseconds(total.download.p50) + " / " + Self.milliseconds(total.download.p95)),
            ("processing p50 / p95", Self.milliseconds(total.processing.p50) + " / " + Self.milliseconds(total.processing.p95)),
        ]
        for (name, value) in figures {
            html += "<div class=\"figure\"><span class=\"small muted\">\(Markup.text(name))</span><b>\(Markup.text(value))</b></div>"
        }
        html += "</div></section>"
        let rows = report.telemetryByAttachment + report.telemetry
        html += "<section class=\"card\"><h2>Outcomes, share of delivered</h2><p class=\"small muted\">"
        for outcome in DeliveryOutcome.allCases {
            html += "<span class=\"key o-\(outcome.rawValue)\"></span>\(Markup.text(ReportText.outcome(outcome)))"
        }
        html += "</p>" + OutcomeChart(title: "Extension outcomes by attachment kind and by category", summaries: rows).markup
        html += "</section>"
        html += "<section class=\"card\"><h2>Per category and attachment kind</h2>" + Self.table(rows + [total]) + "</section>"
        return ConsolePage(title: "Extension", section: .telemetry, viewer: viewer, body: html)
    }

    /// `713 ms`, `12.5 s`.
    static func milliseconds(_ value: Double?) -> String {
        guard let value else { return ReportText.missing }
        return value < 1_000 ? ReportText.milliseconds(value) + " ms" : ReportText.fixed(value / 1_000, 1) + " s"
    }

    static func label(_ summary: TelemetrySummary) -> String {
        let labels = ReportText.telemetryLabels(summary)
        return labels.category + " · " + labels.attachment
    }

    /// One row per summary; data attributes carry the exact numbers.
    static func table(_ summaries: [TelemetrySummary]) -> String {
        var html = "<div class=\"scroll\"><table class=\"telemetry\"><thead><tr><th>category · kind</th><th>delivered</th>"
            + "<th>attached</th><th>timeout</th><th>too large</th><th>time will expire</th><th>download ms p50/p95/p99</th>"
            + "<th>processing ms p50/p95/p99</th><th>cache hits</th><th>mean size</th></tr></thead><tbody>"
        for summary in summaries {
            let attributes: [(String, String)] = [
                ("category", summary.category ?? ""), ("attachment", summary.attachmentKind ?? ""),
                ("delivered", String(summary.delivered)),
                ("attached", String(summary.outcomes[.attached, default: 0])),
                ("timeout", String(summary.outcomes[.timeout, default: 0])),
                ("too-large", String(summary.outcomes[.tooLarge, default: 0])),
                ("time-will-expire", String(summary.timeWillExpire)),
                ("download-p50", Markup.number(summary.download.p50)), ("processing-p50", Markup.number(summary.processing.p50)),
                ("cache-hit-rate", Markup.number(summary.cacheHitRate)), ("bytes-mean", Markup.number(summary.meanBytes)),
            ]
            html += "<tr" + attributes.map { " data-\($0.0)=\"\(Markup.text($0.1))\"" }.joined() + ">"
            let percentiles = [summary.download, summary.processing].map { latency in
                latency.count == 0 ? ReportText.missing : [latency.p50, latency.p95, latency.p99].map(ReportText.milliseconds).joined(separator: " / ")
            }
            let cells = [label(summary), String(summary.delivered),
                         share(summary.outcomes[.attached, default: 0], summary.share(of: .attached)),
                         share(summary.outcomes[.timeout, default: 0], summary.timeoutShare),
                         share(summary.outcomes[.tooLarge, default: 0], summary.tooLargeShare),
                         String(summary.timeWillExpire), percentiles[0], percentiles[1],
                         ReportText.percent(summary.cacheHitRate), ReportText.bytes(summary.meanBytes)]
            html += Markup.cells(cells.map(Markup.text)) + "</tr>"
        }
        return html + "</tbody></table></div>"
    }

    static func share(_ count: Int, _ share: Double?) -> String {
        share.map { "\(count) (\(ReportText.percent($0)))" } ?? String(count)
    }
}

/// Each summary a bar of its delivered notifications split by the extension's outcome, the label
/// above the bar so that long category names fit a phone's width.
struct OutcomeChart {
    var title: String
    var summaries: [TelemetrySummary]

    private let layout = ChartLayout.consoleOutcomes

    var markup: String {
        let width = layout.plotWidth
        var canvas = SVGCanvas(width: layout.width, height: layout.height(rows: summaries.count), label: title, cssClass: "chart")
        for (index, summary) in summaries.enumerated() {
            let y = layout.rowTop(index)
            canvas.text(TelemetryView.label(summary) + " · \(summary.delivered) delivered", x: 0, y: y + 12)
            var x = 0.0
            guard summary.delivered > 0 else {
                canvas.rect(x: 0, y: y + 16, width: width, height: 12, .attribute("rx", "2") + .cssClass("empty"))
                continue
            }
            for outcome in DeliveryOutcome.allCases {
                let count = summary.outcomes[outcome, default: 0]
                guard count > 0 else { continue }
                let share = Double(count) / Double(summary.delivered)
                canvas.rect(x: x, y: y + 16, width: share * width, height: 12, .attribute("rx", "2") + .cssClass("o-" + outcome.rawValue),
                            title: "\(ReportText.outcome(outcome)): \(count) (\(ReportText.percent(share)))")
                x += share * width
            }
        }
        return canvas.markup
    }
}
