extension EngagementReport {
    /// The report as one self-contained HTML page: inline CSS and inline SVG, no scripts, no
    /// external resources. Every text from the data is escaped.
    ///
    /// From top to bottom: the title with the generation time, grouping and filters; the adjusted
    /// answer, one sentence per metric (rich against plain within each category, combined) with
    /// a forest plot per metric (per category the ratio and its interval, the summary as a
    /// diamond, a line at no effect) and a table of adjusted and crude figures; the caveat
    /// in a highlighted box; an overview table of every group's absolute lifts; a section per
    /// group (all categories first) with the counts, a chart of rich against plain rates with
    /// their 95% intervals and the lift and p-value beside each, and the funnel delivered →
    /// displayed → expanded → actioned → opened for rich and plain; then the extension: outcome
    /// shares as stacked bars per category and attachment kind, download and processing latency
    /// percentiles, and a table of cache hit rate, bytes and timeouts; finally the notes.
    public func renderHTML() -> String {
        var html = HTMLPage.opening(title: "Rich vs plain notification engagement", stylesheet: Self.stylesheet)
        html += """
        <header>
        <h1>Rich vs plain notification engagement</h1>

        """
        html += "<dl class=\"meta\"><dt>Generated</dt><dd>\(HTMLText.escape(generatedAt.rfc3339))</dd>"
        if let currentAsOf { html += "<dt>Current as of</dt><dd>\(HTMLText.escape(currentAsOf.summary))</dd>" }
        html += "<dt>Grouping</dt><dd>\(HTMLText.escape(grouping.rawValue))</dd>"
        html += "<dt>Filters</dt><dd>\(HTMLText.escape(filterText))</dd></dl>\n"
        html += "</header>\n"
        html += stratifiedHTML()
        html += "<aside class=\"caveat\" role=\"note\"><strong>Read this first.</strong> "
            + HTMLText.escape(Self.caveat) + "</aside>\n"
        html += "<p class=\"legend\"><span class=\"swatch\" style=\"background:\(ReportPalette.rich)\"></span>rich "
            + "<span class=\"swatch\" style=\"background:\(ReportPalette.plain)\"></span>plain · "
            + "dots are rates per displayed notification, whiskers their 95% intervals · "
            + "<b>bold</b> lifts are significant: the 95% interval of the ratio rich ÷ plain leaves out 1 (p &lt; 0.05); "
            + "the interval in pp is the difference's own and can touch 0 when p is near 0.05</p>\n"
        html += overviewHTML()
        for group in [total] + groups {
            html += groupHTML(group)
        }
        html += telemetryHTML()
        html += "<footer><p>\(HTMLText.escape(Self.denominatorNote))</p>"
        html += "<p>Small sample: a side has fewer than 30 displayed notifications (with the device as the unit, also "
            + "fewer than 30 devices), or fewer than 5 successes or failures; its normal approximations (relative "
            + "interval, p-value) are rough.</p></footer>\n"
        html += "</body>\n</html>\n"
        return html
    }

    private static let stylesheet = """
    :root{color-scheme:light;--rich:\(ReportPalette.rich);--plain:\(ReportPalette.plain)}
    body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;background:#fafafa;\
    margin:0 auto;max-width:1120px;padding:24px}
    h1{font-size:24px;margin:0 0 8px}h2{font-size:18px;margin:0 0 4px}h3{font-size:14px;margin:16px 0 6px;color:#444}
    .meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0 0 16px;color:#444}
    .meta dt{font-weight:600}.meta dd{margin:0}
    .caveat{background:#fff4d6;border:2px solid #e0a800;border-radius:8px;padding:12px 16px;margin:0 0 16px;\
    font-size:15px}
    .legend{color:#444}.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin:0 4px 0 8px;\
    vertical-align:-1px}
    section{background:#fff;border:1px solid #e3e3e3;border-radius:8px;padding:16px;margin:16px 0}
    .counts{color:#555;margin:0 0 8px}
    .charts{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
    svg{max-width:100%;height:auto;font-family:inherit}
    table{border-collapse:collapse;font-size:13px;margin:8px 0}
    th,td{padding:4px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
    th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}
    td.up{color:#1a7f37;font-weight:600}td.down{color:#b42318;font-weight:600}td.flat{color:#777}
    .scroll{overflow-x:auto}footer{color:#555;font-size:13px;margin-top:24px}
    .headline{font-size:15px;padding-left:20px}.headline li{margin:0 0 6px}
    .paradox{color:#b42318;font-weight:600}
    """

    /// The headline: a sentence per metric, the forest plots, the adjusted and crude figures.
    private func stratifiedHTML() -> String {
        let adjustedFor = stratified.contains(where: \.acrossApps) ? "app and category" : "category"
        var html = "<section class=\"adjusted\"><h2>The answer, adjusted for \(adjustedFor)</h2>"
        if let warning = currentAsOf?.headlineWarning { html += "<p class=\"paradox\">\(HTMLText.escape(warning))</p>" }
        html += "<ul class=\"headline\">"
        for summary in stratified {
            var sentence = HTMLText.escape(summary.headline)
            if let warning = summary.crudeWarning {
                let escaped = HTMLText.escape(warning)
                sentence = sentence.replacing(escaped, with: "<span class=\"paradox\">" + escaped + "</span>")
            }
            html += "<li>" + sentence + "</li>"
        }
        if stratified.isEmpty { html += "<li>No metrics to compare.</li>" }
        html += "</ul><div class=\"charts\">"
        for summary in stratified {
            html += "<div><h3>\(HTMLText.escape(summary.metric.label)): rich / plain per category</h3>"
                + ForestPlot(summary: summary).svg + "</div>"
        }
        html += "</div><div class=\"scroll\"><table><thead><tr><th>rate</th><th>adjusted rich / plain</th><th>p</th>"
            + "<th>adjusted rich − plain</th><th>p</th><th>CMH p</th><th>categories Q p</th><th>crude rich / plain</th>"
            + "<th>crude vs adjusted</th></tr></thead><tbody>"
        for summary in stratified {
            let cells = [summary.metric.label, ReportFormat.ratio(summary.riskRatio),
                         ReportFormat.pValue(summary.riskRatio?.pValue), ReportFormat.difference(summary.riskDifference),
                         ReportFormat.pValue(summary.riskDifference?.pValue),
                         ReportFormat.pValue(summary.cochranMantelHaenszel?.pValue),
                         ReportFormat.pValue(summary.homogeneity?.test.pValue), ReportFormat.ratio(summary.crude),
                         ReportFormat.disagreement(summary)]
            html += "<tr>" + cells.map { "<td>" + HTMLText.escape($0) + "</td>" }.joined() + "</tr>"
        }
        html += "</tbody></table></div><p>\(HTMLText.escape(Self.stratifiedNote)) * significant at 95%.</p></section>\n"
        return html
    }

    /// One row per group, one cell per metric: the absolute lift, green or red when significant.
    private func overviewHTML() -> String {
        let metrics = grouping == .action ? total.metrics.map(\.metric) : ReportMetric.standard
        var html = "<section><h2>Overview: rich − plain</h2><div class=\"scroll\"><table><thead><tr><th>group</th>"
            + "<th>displayed rich</th><th>displayed plain</th>"
        for metric in metrics { html += "<th>\(HTMLText.escape(metric.label))</th>" }
        html += "</tr></thead><tbody>"
        for group in [total] + groups {
            html += "<tr><td>\(HTMLText.escape(group.key.label))</td><td>\(group.rich[.displayed])</td>"
                + "<td>\(group.plain[.displayed])</td>"
            for metric in metrics {
                guard let comparison = group.metrics.first(where: { $0.metric == metric }),
                      let lift = comparison.absoluteLift else {
                    html += "<td class=\"flat\">\(ReportFormat.missing)</td>"
                    continue
                }
                let style = comparison.significant == true ? (lift > 0 ? "up" : "down") : "flat"
                html += "<td class=\"\(style)\" title=\"p = \(ReportFormat.pValue(comparison.pValue))\">"
                    + HTMLText.escape(ReportFormat.signed(lift * 100, 1) + " pp") + "</td>"
            }
            html += "</tr>"
        }
        html += "</tbody></table></div></section>\n"
        return html
    }

    private func groupHTML(_ group: ReportGroup) -> String {
        var html = "<section><h2>\(HTMLText.escape(group.key.label))</h2>"
        func counts(_ counts: PresentationCounts, _ stages: [FunnelStage]) -> String {
            stages.map { "\(counts[$0]) \($0.name)" }.joined(separator: ", ")
        }
        let totals = FunnelStage.reportTotals
        html += "<p class=\"counts\">rich: " + counts(group.rich, totals) + " · plain: " + counts(group.plain, totals)
            + " · not displayed: " + counts(group.notDisplayed, totals.filter { $0 != .displayed }) + "</p>"
        html += "<div class=\"charts\">"
        if group.metrics.isEmpty {
            html += "<p>No actions recorded.</p>"
        } else {
            let rows = group.metrics.map { metric in
                var note = ReportFormat.absoluteLift(metric)
                if metric.absoluteLift != nil { note += " · p " + ReportFormat.pValue(metric.pValue) }
                if metric.smallSample { note += " · small" }
                return RateIntervalChart.Row(label: metric.metric.label, rich: metric.rich, plain: metric.plain,
                                             note: note, significant: metric.significant == true)
            }
            html += "<div><h3>Rates per displayed notification, 95% intervals</h3>"
            html += RateIntervalChart(title: "Rates of \(group.key.label), rich and plain", rows: rows).svg + "</div>"
        }
        html += "<div><h3>Funnel, share of delivered</h3>"
        html += FunnelChart(title: "Funnel of \(group.key.label)", sides: [
            .init(name: "rich", colour: ReportPalette.rich, counts: group.rich),
            .init(name: "plain", colour: ReportPalette.plain, counts: group.plain),
        ]).svg + "</div></div>"
        if !group.metrics.isEmpty {
            html += "<details><summary>Numbers</summary><div class=\"scroll\"><table><thead><tr><th>rate</th>"
                + "<th>rich</th><th>plain</th><th>not displayed</th><th>rich − plain</th><th>relative</th><th>p</th>"
                + "<th>flags</th></tr></thead><tbody>"
            for metric in group.metrics {
                let cells = [metric.metric.label, ReportFormat.rate(metric.rich), ReportFormat.rate(metric.plain),
                             String(metric.notDisplayedCount), ReportFormat.absoluteLift(metric),
                             ReportFormat.relativeLift(metric), ReportFormat.pValue(metric.pValue),
                             ReportFormat.flags(metric)]
                html += "<tr>" + cells.map { "<td>" + HTMLText.escape($0) + "</td>" }.joined() + "</tr>"
            }
            html += "</tbody></table></div></details>"
        }
        html += "</section>\n"
        return html
    }

    private func telemetryHTML() -> String {
        var html = "<section><h2>Notification service extension</h2>"
        let summaries = telemetry + telemetryByAttachment + [telemetryTotal]
        guard telemetryTotal.delivered > 0 || !telemetry.isEmpty else {
            return html + "<p>No extension telemetry in this report.</p></section>\n"
        }
        func label(_ summary: TelemetrySummary) -> String {
            let labels = Self.telemetryLabels(summary)
            return labels.category + " · " + labels.attachment
        }
        html += "<h3>Outcomes, share of delivered</h3>"
        html += OutcomeBarsChart(title: "Extension outcomes per category and attachment kind",
                                 rows: summaries.map { .init(label: label($0), summary: $0) }).svg
        html += "<h3>Latency percentiles</h3>"
        html += LatencyChart(title: "Download and processing latency per category and attachment kind",
                             rows: summaries.map {
                                 .init(label: label($0), download: $0.download, processing: $0.processing)
                             }).svg
        html += "<div class=\"scroll\"><table><thead><tr><th>category · attachment</th><th>delivered</th>"
            + "<th>timeout</th><th>too large</th><th>time will expire</th><th>download ms p50/p95/p99</th>"
            + "<th>processing ms p50/p95/p99</th><th>cache hit rate</th><th>bytes total</th><th>bytes mean</th>"
            + "</tr></thead><tbody>"
        for summary in summaries {
            let cells = [label(summary), String(summary.delivered),
                         ReportFormat.countAndShare(summary.outcomes[.timeout, default: 0], summary.timeoutShare),
                         ReportFormat.countAndShare(summary.outcomes[.tooLarge, default: 0], summary.tooLargeShare),
                         String(summary.timeWillExpire), ReportFormat.percentiles(summary.download),
                         ReportFormat.percentiles(summary.processing), ReportFormat.percent(summary.cacheHitRate),
                         ReportFormat.bytes(Double(summary.totalBytes)), ReportFormat.bytes(summary.meanBytes)]
            html += "<tr>" + cells.map { "<td>" + HTMLText.escape($0) + "</td>" }.joined() + "</tr>"
        }
        html += "</tbody></table></div></section>\n"
        return html
    }
}
