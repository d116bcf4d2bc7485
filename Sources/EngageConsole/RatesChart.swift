import EngageCore

/// Rich and plain rates of one group, a row per metric: each rate a dot, its 95% interval a bar.
struct RatesChart {
    var title: String
    var metrics: [MetricComparison]

    private let layout = ChartLayout.consoleRates

    var markup: String {
        let (plotLeft, plotWidth) = (layout.plotLeft, layout.plotWidth)
        let plotBottom = layout.plotBottom(rows: metrics.count)
        var canvas = SVGCanvas(width: layout.width, height: layout.height(rows: metrics.count), label: title, cssClass: "chart")
        let uppers = metrics.flatMap { [$0.rich.interval?.upper, $0.plain.interval?.upper] }.compactMap { $0 }
        // A group with nothing displayed has no interval: its axis is still a rate's, 0 to 100%.
        let scale = ChartScale(covering: uppers.isEmpty ? [1] : uppers, including: [0], ticks: 4)
        for tick in scale.ticks {
            let x = scale.position(tick, from: plotLeft, length: plotWidth)
            canvas.line(x1: x, y1: layout.top, x2: x, y2: plotBottom, .cssClass("grid"))
            canvas.text(scale.label(tick, times: 100) + "%", x: x, y: plotBottom + 14, anchor: .middle, .cssClass("muted"))
        }
        for (index, metric) in metrics.enumerated() {
            let y = layout.rowTop(index)
            canvas.text(metric.metric.label, x: layout.labelWidth - 8, y: y + layout.rowHeight / 2 + 4, anchor: .end)
            for (offset, estimate, side) in [(10.0, metric.rich, "rich"), (20.0, metric.plain, "plain")] {
                let cy = y + offset
                guard let rate = estimate.rate, let interval = estimate.interval else {
                    canvas.text("\(side): none displayed", x: plotLeft + 4, y: cy + 4, .cssClass("muted"))
                    continue
                }
                canvas.line(x1: scale.position(interval.lower, from: plotLeft, length: plotWidth), y1: cy,
                            x2: scale.position(interval.upper, from: plotLeft, length: plotWidth), y2: cy, .cssClass(side))
                canvas.circle(cx: scale.position(rate, from: plotLeft, length: plotWidth), cy: cy, r: 3.5, .cssClass(side),
                              title: "\(side) \(metric.metric.label): \(estimate.successes) of \(estimate.trials), "
                                  + ReportText.rate(estimate))
            }
        }
        return canvas.markup
    }
}
