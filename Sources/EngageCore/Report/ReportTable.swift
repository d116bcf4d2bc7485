extension EngagementReport {
    /// The report for a terminal: a header with the caveat, a block per group (and one for all
    /// categories) with the counts and rates of rich and plain side by side, then the extension
    /// telemetry and the notes. Lines end with "\n"; cells are aligned by character count.
    public func renderTable() -> String {
        var lines: [String] = []
        lines.append("ENGAGEMENT REPORT: rich vs plain notifications")
        lines.append("generated  \(generatedAt.rfc3339)")
        if let currentAsOf { lines.append("current    as of \(currentAsOf.summary)") }
        lines.append("grouping   \(grouping.rawValue)")
        lines.append("filters    \(filterText)")
        lines.append("")
        lines.append(contentsOf: ReportFormat.wrap("CAVEAT: " + Self.caveat, width: 100))
        lines.append(contentsOf: stratifiedTableLines())

        for group in groups + [total] {
            lines.append("")
            lines.append("== \(group.key.label) ==")
            var counts = TextTable([.left, .right, .right, .right])
            counts.append(["", "rich", "plain", "not displayed"])
            for stage in FunnelStage.reportTotals {
                counts.append([stage.name, String(group.rich[stage]), String(group.plain[stage]),
                               String(group.notDisplayed[stage])])
            }
            lines.append(contentsOf: counts.lines(indent: "  "))
            lines.append("")
            guard !group.metrics.isEmpty else {
                lines.append("  no actions recorded")
                continue
            }
            var rates = TextTable([.left, .left, .left, .left, .left, .right, .left])
            rates.append(["rate per displayed", "rich", "plain", "rich − plain", "relative", "p", "flags"])
            for metric in group.metrics {
                rates.append([metric.metric.label, ReportFormat.rate(metric.rich), ReportFormat.rate(metric.plain),
                              ReportFormat.absoluteLift(metric), ReportFormat.relativeLift(metric),
                              ReportFormat.pValue(metric.pValue), ReportFormat.flags(metric)])
            }
            lines.append(contentsOf: rates.lines(indent: "  "))
        }

        lines.append("")
        lines.append("== extension telemetry ==")
        let summaries = telemetry + telemetryByAttachment + [telemetryTotal]
        var outcomes = TextTable([.left, .left, .right] + DeliveryOutcome.allCases.map { _ in .right } + [.right])
        outcomes.append(["category", "attachment", "delivered"] + DeliveryOutcome.allCases.map(Self.outcomeLabel)
                        + ["time will expire"])
        for summary in summaries {
            let labels = Self.telemetryLabels(summary)
            outcomes.append([labels.category, labels.attachment, String(summary.delivered)]
                            + DeliveryOutcome.allCases.map {
                                ReportFormat.countAndShare(summary.outcomes[$0, default: 0], summary.share(of: $0))
                            }
                            + [String(summary.timeWillExpire)])
        }
        lines.append(contentsOf: outcomes.lines(indent: "  "))
        lines.append("")
        var performance = TextTable([.left, .left, .right, .right, .right, .right, .right])
        performance.append(["category", "attachment", "download ms p50/p95/p99", "processing ms p50/p95/p99",
                            "cache hit rate", "bytes total", "bytes mean"])
        for summary in summaries {
            let labels = Self.telemetryLabels(summary)
            performance.append([labels.category, labels.attachment, ReportFormat.percentiles(summary.download),
                                ReportFormat.percentiles(summary.processing), ReportFormat.percent(summary.cacheHitRate),
                                ReportFormat.bytes(Double(summary.totalBytes)), ReportFormat.bytes(summary.meanBytes)])
        }
        lines.append(contentsOf: performance.lines(indent: "  "))

        lines.append("")
        lines.append(contentsOf: ReportFormat.wrap("NOTE: " + Self.denominatorNote, width: 100))
        lines.append(contentsOf: ReportFormat.wrap("ADJUSTED: " + Self.stratifiedNote, width: 100))
        lines.append(contentsOf: ReportFormat.wrap("Flags: significant means the interval leaves out no effect (p < 0.05); small sample means a side "
            + "has fewer than 30 displayed notifications (with the device as the unit, also fewer than 30 devices) or fewer "
            + "than 5 successes or failures.", width: 100))
        return lines.joined(separator: "\n") + "\n"
    }
}

extension EngagementReport {
    /// The headline block: a sentence per metric, then the adjusted and crude figures side by side.
    func stratifiedTableLines() -> [String] {
        var lines = ["", stratified.contains(where: \.acrossApps)
            ? "== ADJUSTED FOR APP AND CATEGORY: rich vs plain within each app's category, combined =="
            : "== ADJUSTED FOR CATEGORY: rich vs plain within each category, combined =="]
        if let warning = currentAsOf?.headlineWarning { lines.append(contentsOf: ReportFormat.wrap("! " + warning, width: 98)) }
        guard !stratified.isEmpty else { return lines + ["  no metrics to compare"] }
        for summary in stratified {
            lines.append(contentsOf: ReportFormat.wrap(summary.headline, width: 98).enumerated().map { index, line in
                (index == 0 ? "- " : "  ") + line
            })
        }
        lines.append("")
        var table = TextTable([.left, .left, .right, .left, .right, .right, .right, .left, .left])
        table.append(["rate per displayed", "adjusted rich / plain", "p", "adjusted rich − plain", "p", "CMH p",
                      "categories Q p", "crude rich / plain", "crude vs adjusted"])
        for summary in stratified {
            table.append([summary.metric.label, ReportFormat.ratio(summary.riskRatio),
                          ReportFormat.pValue(summary.riskRatio?.pValue), ReportFormat.difference(summary.riskDifference),
                          ReportFormat.pValue(summary.riskDifference?.pValue),
                          ReportFormat.pValue(summary.cochranMantelHaenszel?.pValue),
                          ReportFormat.pValue(summary.homogeneity?.test.pValue), ReportFormat.ratio(summary.crude),
                          ReportFormat.disagreement(summary)])
        }
        lines.append(contentsOf: table.lines(indent: "  "))
        return lines
    }
}
