/// Rich and plain rates of one group as dots with their 95% interval as whiskers, one metric
/// per row, the lift and p-value written beside each.
struct RateIntervalChart {
    struct Row {
        var label: String
        var rich: RateEstimate
        var plain: RateEstimate
        var note: String
        var significant: Bool
    }

    var title: String
    var rows: [Row]

    private let labelWidth = 120.0
    private let plotWidth = 340.0
    private let noteWidth = 250.0
    private let rowHeight = 40.0
    private let top = 10.0
    private let axisHeight = 26.0

    var svg: String {
        let plotLeft = labelWidth
        let height = top + Double(rows.count) * rowHeight + axisHeight
        var canvas = SVGCanvas(width: labelWidth + plotWidth + noteWidth, height: height, label: title)
        let highest = rows.flatMap { [$0.rich.interval?.upper, $0.plain.interval?.upper] }.compactMap { $0 }.max() ?? 0
        let axis = RateAxis(covering: highest)
        let plotBottom = top + Double(rows.count) * rowHeight
        for tick in axis.ticks {
            let x = axis.position(tick, left: plotLeft, width: plotWidth)
            canvas.line(x1: x, y1: top, x2: x, y2: plotBottom, stroke: ReportPalette.grid)
            canvas.text(ReportFormat.fixed(tick * 100, 0) + "%", x: x, y: plotBottom + 16, anchor: .middle, size: 11,
                        fill: ReportPalette.muted)
        }
        canvas.line(x1: plotLeft, y1: plotBottom, x2: plotLeft + plotWidth, y2: plotBottom, stroke: ReportPalette.axis)
        for (index, row) in rows.enumerated() {
            let y = top + Double(index) * rowHeight
            canvas.text(row.label, x: labelWidth - 10, y: y + rowHeight / 2 + 4, anchor: .end, size: 12)
            for (offset, estimate, colour, name) in [(13.0, row.rich, ReportPalette.rich, "rich"),
                                                     (27.0, row.plain, ReportPalette.plain, "plain")] {
                let cy = y + offset
                guard let rate = estimate.rate, let interval = estimate.interval else {
                    canvas.text("\(name): no displayed notifications", x: plotLeft + 6, y: cy + 4, size: 10,
                                fill: ReportPalette.muted)
                    continue
                }
                let x1 = axis.position(interval.lower, left: plotLeft, width: plotWidth)
                let x2 = axis.position(interval.upper, left: plotLeft, width: plotWidth)
                canvas.line(x1: x1, y1: cy, x2: x2, y2: cy, stroke: colour, width: 2)
                canvas.line(x1: x1, y1: cy - 4, x2: x1, y2: cy + 4, stroke: colour, width: 2)
                canvas.line(x1: x2, y1: cy - 4, x2: x2, y2: cy + 4, stroke: colour, width: 2)
                canvas.circle(cx: axis.position(rate, left: plotLeft, width: plotWidth), cy: cy, r: 4.5, fill: colour,
                              stroke: "#fff",
                              title: "\(name) \(row.label): \(estimate.successes) of \(estimate.trials) displayed, "
                                  + ReportFormat.rate(estimate))
            }
            canvas.text(row.note, x: plotLeft + plotWidth + 12, y: y + rowHeight / 2 + 4, size: 11,
                        fill: row.significant ? "#111" : ReportPalette.muted, bold: row.significant)
        }
        return canvas.markup
    }
}

/// Delivered → displayed → expanded → actioned → opened, rich and plain side by side, bars as a
/// share of delivered notifications of the same presentation.
struct FunnelChart {
    struct Side {
        var name: String
        var colour: String
        var counts: PresentationCounts
    }

    var title: String
    var sides: [Side]

    static let stages: [FunnelStage] = [.delivered, .displayed, .expanded, .actioned, .opened]

    private let labelWidth = 80.0
    private let barWidth = 160.0
    /// Room right of each bar for its count and share.
    private let valueWidth = 96.0
    private let gap = 12.0
    private let rowHeight = 26.0
    private let top = 24.0

    var svg: String {
        let columnWidth = barWidth + valueWidth + gap
        let width = labelWidth + Double(sides.count) * columnWidth
        let height = top + Double(Self.stages.count) * rowHeight + 4
        var canvas = SVGCanvas(width: width, height: height, label: title)
        for (column, side) in sides.enumerated() {
            let left = labelWidth + Double(column) * columnWidth
            canvas.text(side.name, x: left, y: 15, size: 12, fill: side.colour, bold: true)
            let base = side.counts[.delivered]
            for (index, stage) in Self.stages.enumerated() {
                let name = stage.name
                let y = top + Double(index) * rowHeight
                let count = side.counts[stage]
                let share = base > 0 ? Double(count) / Double(base) : nil
                canvas.rect(x: left, y: y, width: barWidth, height: rowHeight - 6, fill: "#f1f1f1", cornerRadius: 2)
                canvas.rect(x: left, y: y, width: barWidth * min(max(share ?? 0, 0), 1), height: rowHeight - 6,
                            fill: side.colour, title: "\(side.name) \(name): \(count)"
                                + (share.map { " (" + ReportFormat.percent($0) + " of delivered)" } ?? ""),
                            cornerRadius: 2)
                canvas.text("\(count) · " + ReportFormat.percent(share), x: left + barWidth + 6, y: y + rowHeight - 11,
                            size: 11, fill: "#111")
            }
        }
        for (index, stage) in Self.stages.enumerated() {
            canvas.text(stage.name, x: labelWidth - 8, y: top + Double(index) * rowHeight + rowHeight - 11, anchor: .end,
                        size: 11)
        }
        return canvas.markup
    }
}

/// Each row a 100% bar of delivered notifications split by the extension's outcome.
struct OutcomeBarsChart {
    struct Row {
        var label: String
        var summary: TelemetrySummary
    }

    var title: String
    var rows: [Row]

    private let labelWidth = 200.0
    private let barWidth = 420.0
    private let countWidth = 90.0
    private let rowHeight = 26.0
    private let legendHeight = 28.0

    var svg: String {
        let height = legendHeight + Double(rows.count) * rowHeight + 4
        var canvas = SVGCanvas(width: labelWidth + barWidth + countWidth, height: height, label: title)
        var legendX = 0.0
        for outcome in DeliveryOutcome.allCases {
            canvas.rect(x: legendX, y: 6, width: 12, height: 12, fill: ReportPalette.outcome(outcome), cornerRadius: 2)
            let label = EngagementReport.outcomeLabel(outcome)
            canvas.text(label, x: legendX + 16, y: 16, size: 11)
            legendX += 16 + Double(label.count) * 6.5 + 16
        }
        for (index, row) in rows.enumerated() {
            let y = legendHeight + Double(index) * rowHeight
            canvas.text(row.label, x: labelWidth - 8, y: y + 15, anchor: .end, size: 11)
            canvas.rect(x: labelWidth, y: y, width: barWidth, height: rowHeight - 6, fill: "#f1f1f1")
            var x = labelWidth
            for outcome in DeliveryOutcome.allCases {
                guard let share = row.summary.share(of: outcome), share > 0 else { continue }
                let width = barWidth * min(share, 1)
                canvas.rect(x: x, y: y, width: width, height: rowHeight - 6, fill: ReportPalette.outcome(outcome),
                            title: "\(row.label) \(EngagementReport.outcomeLabel(outcome)): "
                                + "\(row.summary.outcomes[outcome, default: 0]) (\(ReportFormat.percent(share)))")
                if width >= 44 {
                    canvas.text(ReportFormat.percent(share, decimals: 0), x: x + width / 2, y: y + 14, anchor: .middle,
                                size: 10, fill: "#111")
                }
                x += width
            }
            canvas.text("\(row.summary.delivered) delivered", x: labelWidth + barWidth + 8, y: y + 15, size: 11,
                        fill: ReportPalette.muted)
        }
        return canvas.markup
    }
}

/// Download and processing latency per row on a log axis: a bar from p50 to p99 with dots at
/// p50 and p95 and a tick at p99.
struct LatencyChart {
    struct Row {
        var label: String
        var download: LatencyPercentiles
        var processing: LatencyPercentiles
    }

    var title: String
    var rows: [Row]

    private let labelWidth = 200.0
    private let plotWidth = 420.0
    private let noteWidth = 190.0
    private let rowHeight = 36.0
    private let top = 30.0
    private let axisHeight = 24.0

    var svg: String {
        let values = rows.flatMap { [$0.download.p50, $0.download.p99, $0.processing.p50, $0.processing.p99] }
            .compactMap { $0 }
        let height = top + Double(rows.count) * rowHeight + axisHeight
        var canvas = SVGCanvas(width: labelWidth + plotWidth + noteWidth, height: height, label: title)
        guard let axis = LogAxis(covering: values) else {
            canvas.text("no latencies recorded", x: labelWidth, y: top, size: 12, fill: ReportPalette.muted)
            return canvas.markup
        }
        canvas.rect(x: labelWidth, y: 6, width: 12, height: 12, fill: ReportPalette.download, cornerRadius: 2)
        canvas.text("download", x: labelWidth + 16, y: 16, size: 11)
        canvas.rect(x: labelWidth + 90, y: 6, width: 12, height: 12, fill: ReportPalette.processing, cornerRadius: 2)
        canvas.text("processing", x: labelWidth + 106, y: 16, size: 11)
        canvas.text("bar p50 to p99 · dots p50, p95", x: labelWidth + 190, y: 16, size: 11, fill: ReportPalette.muted)
        let plotBottom = top + Double(rows.count) * rowHeight
        for tick in axis.ticks {
            let x = axis.position(tick, left: labelWidth, width: plotWidth)
            canvas.line(x1: x, y1: top, x2: x, y2: plotBottom, stroke: ReportPalette.grid)
            canvas.text(LogAxis.label(tick), x: x, y: plotBottom + 16, anchor: .middle, size: 11, fill: ReportPalette.muted)
        }
        canvas.line(x1: labelWidth, y1: plotBottom, x2: labelWidth + plotWidth, y2: plotBottom, stroke: ReportPalette.axis)
        for (index, row) in rows.enumerated() {
            let y = top + Double(index) * rowHeight
            canvas.text(row.label, x: labelWidth - 8, y: y + rowHeight / 2 + 4, anchor: .end, size: 11)
            for (offset, latency, colour, name) in [(11.0, row.download, ReportPalette.download, "download"),
                                                    (25.0, row.processing, ReportPalette.processing, "processing")] {
                let cy = y + offset
                guard let p50 = latency.p50, let p95 = latency.p95, let p99 = latency.p99 else { continue }
                let x50 = axis.position(p50, left: labelWidth, width: plotWidth)
                let x95 = axis.position(p95, left: labelWidth, width: plotWidth)
                let x99 = axis.position(p99, left: labelWidth, width: plotWidth)
                let text = "\(name) ms p50/p95/p99: " + ReportFormat.percentiles(latency)
                canvas.rect(x: x50, y: cy - 3, width: max(x99 - x50, 1), height: 6, fill: colour, title: text)
                canvas.circle(cx: x50, cy: cy, r: 4, fill: colour, stroke: "#fff", title: text)
                canvas.circle(cx: x95, cy: cy, r: 4, fill: "#fff", stroke: colour, title: text)
                canvas.line(x1: x99, y1: cy - 6, x2: x99, y2: cy + 6, stroke: colour, width: 2)
                canvas.text(ReportFormat.percentiles(latency) + " ms", x: labelWidth + plotWidth + 10, y: cy + 4,
                            size: 10, fill: ReportPalette.muted)
            }
        }
        return canvas.markup
    }
}
