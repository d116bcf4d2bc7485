import Foundation

/// One metric's adjusted answer as a forest plot: per category the ratio rich / plain as a
/// square with its interval as a line, the Mantel-Haenszel summary as a diamond spanning its
/// interval, the crude ratio as a hollow circle for comparison, and a dashed line at 1 (no
/// effect), on a logarithmic axis so that 0.5x and 2x sit equally far from 1.
struct ForestPlot {
    let summary: StratifiedMetricSummary

    private let layout = ChartLayout.forestPlot

    var svg: String {
        let rows = summary.categories.count + 2
        let height = layout.height(rows: rows)
        var canvas = SVGCanvas(width: layout.width, height: height,
                               label: "Forest plot of \(summary.metric.label): rich / plain per category and adjusted")
        let estimates = summary.categories.compactMap(\.ratio) + [summary.riskRatio, summary.crude].compactMap { $0 }
        let axis = RatioAxis(covering: estimates.flatMap { [$0.interval.lower, $0.interval.upper] })
        let plotBottom = layout.plotBottom(rows: rows)
        func x(_ value: Double) -> Double { axis.position(value, from: layout.plotLeft, length: layout.plotWidth) }

        for tick in axis.ticks {
            canvas.line(x1: x(tick), y1: layout.top, x2: x(tick), y2: plotBottom, .stroke(ReportPalette.grid))
            canvas.text(ReportFormat.fixed(tick, tick < 1 ? 2 : (tick < 10 ? 1 : 0)) + "x", x: x(tick), y: plotBottom + 14,
                        anchor: .middle, .mutedText(size: 11))
        }
        canvas.line(x1: x(1), y1: layout.top, x2: x(1), y2: plotBottom, .stroke("#333", dashed: true))
        canvas.text("← plain higher · rich higher →", x: x(1), y: plotBottom + 27, anchor: .middle,
                    .mutedText(size: 10))

        func note(_ estimate: EffectEstimate, _ y: Double, bold: Bool = false) {
            canvas.text(StratifiedMetricSummary.ratio(estimate.estimate) + " "
                        + StratifiedMetricSummary.interval(estimate.interval),
                        x: layout.plotRight + 10, y: y + 4,
                        .font(size: 11, fill: estimate.isSignificant ? "#111" : ReportPalette.muted),
                        bold: bold || estimate.isSignificant)
        }
        for (index, category) in summary.categories.enumerated() {
            let y = layout.top + (Double(index) + 0.5) * layout.rowHeight
            let flagged = summary.disagreeing.contains(category.name)
            canvas.text(category.name + (flagged ? " ≠" : ""), x: layout.labelWidth - 10, y: y + 4, anchor: .end,
                        .font(size: 12, fill: flagged ? "#b42318" : "#222"), bold: flagged)
            guard let ratio = category.ratio else {
                canvas.text("no ratio (no plain successes)", x: layout.plotLeft + 6, y: y + 4, .mutedText(size: 10))
                continue
            }
            canvas.line(x1: x(ratio.interval.lower), y1: y, x2: x(ratio.interval.upper), y2: y, .stroke("#444", width: 1.5))
            // Square area grows with the category's displayed notifications, as forest plots weigh.
            // In Double: stored counts may add up past the largest integer.
            let trials = Double(category.rich.trials) + Double(category.plain.trials)
            let largest = summary.categories.map { Double($0.rich.trials) + Double($0.plain.trials) }.max() ?? 1
            let side = 4 + 8 * (trials / max(largest, 1)).squareRoot()
            canvas.rect(x: x(ratio.estimate) - side / 2, y: y - side / 2, width: side, height: side,
                        .fill(ReportPalette.rich),
                        title: "\(category.name): rich \(category.rich.successes)/\(category.rich.trials), "
                            + "plain \(category.plain.successes)/\(category.plain.trials), ratio "
                            + StratifiedMetricSummary.ratio(ratio.estimate) + " " + StratifiedMetricSummary.interval(ratio.interval))
            note(ratio, y)
        }
        let adjustedY = layout.top + (Double(summary.categories.count) + 0.5) * layout.rowHeight
        canvas.text("adjusted (MH)", x: layout.labelWidth - 10, y: adjustedY + 4, anchor: .end, .font(size: 12), bold: true)
        if let riskRatio = summary.riskRatio {
            canvas.polygon([(x(riskRatio.interval.lower), adjustedY), (x(riskRatio.estimate), adjustedY - 7),
                            (x(riskRatio.interval.upper), adjustedY), (x(riskRatio.estimate), adjustedY + 7)],
                           .fill("#111"), title: summary.headline)
            note(riskRatio, adjustedY, bold: true)
        } else {
            canvas.text(summary.unavailable ?? "not enough data", x: layout.plotLeft + 6, y: adjustedY + 4,
                        .mutedText(size: 10))
        }
        let crudeY = adjustedY + layout.rowHeight
        canvas.text("crude (pooled)", x: layout.labelWidth - 10, y: crudeY + 4, anchor: .end, .mutedText(size: 12))
        if let crude = summary.crude {
            canvas.line(x1: x(crude.interval.lower), y1: crudeY, x2: x(crude.interval.upper), y2: crudeY,
                        .stroke(ReportPalette.muted, width: 1.5, dashed: true))
            canvas.circle(cx: x(crude.estimate), cy: crudeY, r: 4, .fill("#fff", stroke: ReportPalette.muted),
                          title: "crude: every category pooled, " + StratifiedMetricSummary.ratio(crude.estimate))
            note(crude, crudeY)
        }
        return canvas.markup
    }
}

/// A logarithmic axis of ratios around 1, from a round lower to a round upper bound.
struct RatioAxis {
    let lower: Double
    let upper: Double

    static let steps = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100]

    /// Covers `values` and 1; bounds outside 0.01...100 (a ratio interval reaching 0) are cut there.
    init(covering values: [Double]) {
        let finite = values.filter { $0.isFinite && $0 > 0 }
        let smallest = min(finite.min() ?? 1, 0.8)
        let largest = max(finite.max() ?? 1, 1.25)
        lower = Self.steps.last { $0 <= smallest } ?? Self.steps.first!
        upper = Self.steps.first { $0 >= largest } ?? Self.steps.last!
    }

    var ticks: [Double] { Self.steps.filter { $0 >= lower && $0 <= upper } }

    func position(_ value: Double, from start: Double, length: Double) -> Double {
        let clamped = min(max(value, lower), upper)
        let span = log(upper) - log(lower)
        return start + (span > 0 ? (log(clamped) - log(lower)) / span : 0.5) * length
    }
}
