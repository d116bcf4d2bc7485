/// Rich and plain rates of one group as dots with their 95% interval as whiskers, one metric
/// per row, the lift and p-value written beside each.
struct RateIntervalChart: ReportRowChart {
    struct Row {
        var label: String
        var rich: RateEstimate
        var plain: RateEstimate
        var note: String
        var significant: Bool
    }

    var title: String
    var rows: [Row]

    let layout = ChartLayout.rateIntervals

    func draw(on canvas: inout SVGCanvas) {
        let highest = rows.flatMap { [$0.rich.interval?.upper, $0.plain.interval?.upper] }.compactMap { $0 }.max() ?? 0
        let axis = ChartScale(rateCovering: highest)
        let plotBottom = layout.plotBottom(rows: rows.count)
        for tick in axis.ticks {
            let x = axis.position(tick, from: layout.plotLeft, length: layout.plotWidth)
            canvas.line(x1: x, y1: layout.top, x2: x, y2: plotBottom, .stroke(ReportPalette.grid))
            canvas.text(ReportFormat.fixed(tick * 100, 0) + "%", x: x, y: plotBottom + 16, anchor: .middle,
                        .mutedText(size: 11))
        }
        canvas.line(x1: layout.plotLeft, y1: plotBottom, x2: layout.plotRight, y2: plotBottom, .stroke(ReportPalette.axis))
        for (index, row) in rows.enumerated() {
            let y = layout.rowTop(index)
            canvas.text(row.label, x: layout.labelWidth - 10, y: y + layout.rowHeight / 2 + 4, anchor: .end,
                        .font(size: 12))
            for (offset, estimate, colour, name) in [(13.0, row.rich, ReportPalette.rich, "rich"),
                                                     (27.0, row.plain, ReportPalette.plain, "plain")] {
                let cy = y + offset
                guard let rate = estimate.rate, let interval = estimate.interval else {
                    canvas.text("\(name): no displayed notifications", x: layout.plotLeft + 6, y: cy + 4,
                                .mutedText(size: 10))
                    continue
                }
                let x1 = axis.position(interval.lower, from: layout.plotLeft, length: layout.plotWidth)
                let x2 = axis.position(interval.upper, from: layout.plotLeft, length: layout.plotWidth)
                canvas.line(x1: x1, y1: cy, x2: x2, y2: cy, .stroke(colour, width: 2))
                canvas.line(x1: x1, y1: cy - 4, x2: x1, y2: cy + 4, .stroke(colour, width: 2))
                canvas.line(x1: x2, y1: cy - 4, x2: x2, y2: cy + 4, .stroke(colour, width: 2))
                canvas.circle(cx: axis.position(rate, from: layout.plotLeft, length: layout.plotWidth), cy: cy, r: 4.5,
                              .fill(colour, stroke: "#fff"),
                              title: "\(name) \(row.label): \(estimate.successes) of \(estimate.trials) displayed, "
                                  + ReportFormat.rate(estimate))
            }
            canvas.text(row.note, x: layout.plotRight + 12, y: y + layout.rowHeight / 2 + 4,
                        .font(size: 11, fill: row.significant ? "#111" : ReportPalette.muted), bold: row.significant)
        }
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

    private let layout = ChartLayout.funnel

    var svg: String {
        let columnWidth = layout.plotWidth + layout.noteWidth
        let width = layout.labelWidth + Double(sides.count) * columnWidth
        let height = layout.height(rows: Self.stages.count)
        var canvas = SVGCanvas(width: width, height: height, label: title)
        for (column, side) in sides.enumerated() {
            let left = layout.labelWidth + Double(column) * columnWidth
            canvas.text(side.name, x: left, y: 15, .font(size: 12, fill: side.colour), bold: true)
            let base = side.counts[.delivered]
            for (index, stage) in Self.stages.enumerated() {
                let name = stage.name
                let y = layout.rowTop(index)
                let count = side.counts[stage]
                let share = base > 0 ? Double(count) / Double(base) : nil
                canvas.rect(x: left, y: y, width: layout.plotWidth, height: layout.rowHeight - 6,
                            .fill("#f1f1f1") + .cornerRadius(2))
                canvas.rect(x: left, y: y, width: layout.plotWidth * min(max(share ?? 0, 0), 1),
                            height: layout.rowHeight - 6, .fill(side.colour) + .cornerRadius(2),
                            title: "\(side.name) \(name): \(count)"
                                + (share.map { " (" + ReportFormat.percent($0) + " of delivered)" } ?? ""))
                canvas.text("\(count) · " + ReportFormat.percent(share), x: left + layout.plotWidth + 6,
                            y: y + layout.rowHeight - 11, .font(size: 11, fill: "#111"))
            }
        }
        for (index, stage) in Self.stages.enumerated() {
            canvas.text(stage.name, x: layout.labelWidth - 8, y: layout.rowTop(index) + layout.rowHeight - 11, anchor: .end,
                        .font(size: 11))
        }
        return canvas.markup
    }
}

/// Each row a 100% bar of delivered notifications split by the extension's outcome.
struct OutcomeBarsChart: ReportRowChart {
    struct Row {
        var label: String
        var summary: TelemetrySummary
    }

    var title: String
    var rows: [Row]

    let layout = ChartLayout.outcomeBars

    func draw(on canvas: inout SVGCanvas) {
        var legendX = 0.0
        for outcome in DeliveryOutcome.allCases {
            canvas.rect(x: legendX, y: 6, width: 12, height: 12, .fill(ReportPalette.outcome(outcome)) + .cornerRadius(2))
            let label = EngagementReport.outcomeLabel(outcome)
            canvas.text(label, x: legendX + 16, y: 16, .font(size: 11))
            legendX += 16 + Double(label.count) * 6.5 + 16
        }
        for (index, row) in rows.enumerated() {
            let y = layout.rowTop(index)
            canvas.text(row.label, x: layout.labelWidth - 8, y: y + 15, anchor: .end, .font(size: 11))
            canvas.rect(x: layout.labelWidth, y: y, width: layout.plotWidth, height: layout.rowHeight - 6, .fill("#f1f1f1"))
            var x = layout.labelWidth
            for outcome in DeliveryOutcome.allCases {
                guard let share = row.summary.share(of: outcome), share > 0 else { continue }
                let width = layout.plotWidth * min(share, 1)
                canvas.rect(x: x, y: y, width: width, height: layout.rowHeight - 6, .fill(ReportPalette.outcome(outcome)),
                            title: "\(row.label) \(EngagementReport.outcomeLabel(outcome)): "
                                + "\(row.summary.outcomes[outcome, default: 0]) (\(ReportFormat.percent(share)))")
                if width >= 44 {
                    canvas.text(ReportFormat.percent(share, decimals: 0), x: x + width / 2, y: y + 14, anchor: .middle,
                                .font(size: 10, fill: "#111"))
                }
                x += width
            }
            canvas.text("\(row.summary.delivered) delivered", x: layout.plotRight + 8, y: y + 15, .mutedText(size: 11))
        }
    }
}

/// Download and processing latency per row on a log axis: a bar from p50 to p99 with dots at
/// p50 and p95 and a tick at p99.
struct LatencyChart: ReportRowChart {
    struct Row {
        var label: String
        var download: LatencyPercentiles
        var processing: LatencyPercentiles
    }

    var title: String
    var rows: [Row]

    let layout = ChartLayout.latency

    func draw(on canvas: inout SVGCanvas) {
        let values = rows.flatMap { [$0.download.p50, $0.download.p99, $0.processing.p50, $0.processing.p99] }
            .compactMap { $0 }
        guard let axis = LogAxis(covering: values) else {
            canvas.text("no latencies recorded", x: layout.labelWidth, y: layout.top, .mutedText(size: 12))
            return
        }
        canvas.rect(x: layout.labelWidth, y: 6, width: 12, height: 12, .fill(ReportPalette.download) + .cornerRadius(2))
        canvas.text("download", x: layout.labelWidth + 16, y: 16, .font(size: 11))
        canvas.rect(x: layout.labelWidth + 90, y: 6, width: 12, height: 12,
                    .fill(ReportPalette.processing) + .cornerRadius(2))
        canvas.text("processing", x: layout.labelWidth + 106, y: 16, .font(size: 11))
        canvas.text("bar p50 to p99 · dots p50, p95", x: layout.labelWidth + 190, y: 16, .mutedText(size: 11))
        let plotBottom = layout.plotBottom(rows: rows.count)
        for tick in axis.ticks {
            let x = axis.position(tick, from: layout.labelWidth, length: layout.plotWidth)
            canvas.line(x1: x, y1: layout.top, x2: x, y2: plotBottom, .stroke(ReportPalette.grid))
            canvas.text(LogAxis.label(tick), x: x, y: plotBottom + 16, anchor: .middle, .mutedText(size: 11))
        }
        canvas.line(x1: layout.labelWidth, y1: plotBottom, x2: layout.plotRight, y2: plotBottom,
                    .stroke(ReportPalette.axis))
        for (index, row) in rows.enumerated() {
            let y = layout.rowTop(index)
            canvas.text(row.label, x: layout.labelWidth - 8, y: y + layout.rowHeight / 2 + 4, anchor: .end, .font(size: 11))
            for (offset, latency, colour, name) in [(11.0, row.download, ReportPalette.download, "download"),
                                                    (25.0, row.processing, ReportPalette.processing, "processing")] {
                let cy = y + offset
                guard let p50 = latency.p50, let p95 = latency.p95, let p99 = latency.p99 else { continue }
                let x50 = axis.position(p50, from: layout.labelWidth, length: layout.plotWidth)
                let x95 = axis.position(p95, from: layout.labelWidth, length: layout.plotWidth)
                let x99 = axis.position(p99, from: layout.labelWidth, length: layout.plotWidth)
                let text = "\(name) ms p50/p95/p99: " + ReportFormat.percentiles(latency)
                canvas.rect(x: x50, y: cy - 3, width: max(x99 - x50, 1), height: 6, .fill(colour), title: text)
                canvas.circle(cx: x50, cy: cy, r: 4, .fill(colour, stroke: "#fff"), title: text)
                canvas.circle(cx: x95, cy: cy, r: 4, .fill("#fff", stroke: colour), title: text)
                canvas.line(x1: x99, y1: cy - 6, x2: x99, y2: cy + 6, .stroke(colour, width: 2))
                canvas.text(ReportFormat.percentiles(latency) + " ms", x: layout.plotRight + 10, y: cy + 4,
                            .mutedText(size: 10))
            }
        }
    }
}

/// A chart of the report page drawn a row at a time: its canvas is the layout's size for its rows,
/// titled for screen readers.
protocol ReportRowChart {
    associatedtype Row
    var title: String { get }
    var rows: [Row] { get }
    var layout: ChartLayout { get }
    /// Draws the rows, and the axes and legends around them.
    func draw(on canvas: inout SVGCanvas)
}

extension ReportRowChart {
    var svg: String {
        var canvas = SVGCanvas(width: layout.width, height: layout.height(rows: rows.count), label: title)
        draw(on: &canvas)
        return canvas.markup
    }
}
