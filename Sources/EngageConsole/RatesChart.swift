import EngageCore

/// Rich and plain rates of one group, a row per metric: each rate a dot, its 95% interval a bar.
/// Drawn 360 units wide so that it reads on a phone without zooming.
struct RatesChart {
    var title: String
    var metrics: [MetricComparison]

    private let width = 360.0
    private let labelWidth = 86.0
    private let right = 12.0
    private let rowHeight = 30.0
    private let top = 6.0
    private let axisHeight = 20.0

    var markup: String {
        let plotLeft = labelWidth
        let plotWidth = width - labelWidth - right
        let plotBottom = top + Double(metrics.count) * rowHeight
        var canvas = ChartCanvas(width: width, height: plotBottom + axisHeight, label: title)
        let uppers = metrics.flatMap { [$0.rich.interval?.upper, $0.plain.interval?.upper] }.compactMap { $0 }
        let scale = ChartScale(covering: uppers, including: [0], ticks: 4)
        for tick in scale.ticks {
            let x = scale.position(tick, from: plotLeft, length: plotWidth)
            canvas.line(x1: x, y1: top, x2: x, y2: plotBottom, class: "grid")
            canvas.text(scale.label(tick, times: 100) + "%", x: x, y: plotBottom + 14, anchor: .middle, muted: true)
        }
        for (index, metric) in metrics.enumerated() {
            let y = top + Double(index) * rowHeight
            canvas.text(metric.metric.label, x: labelWidth - 8, y: y + rowHeight / 2 + 4, anchor: .end)
            for (offset, estimate, side) in [(10.0, metric.rich, "rich"), (20.0, metric.plain, "plain")] {
                let cy = y + offset
                guard let rate = estimate.rate, let interval = estimate.interval else {
                    canvas.text("\(side): none displayed", x: plotLeft + 4, y: cy + 4, muted: true)
                    continue
                }
                canvas.line(x1: scale.position(interval.lower, from: plotLeft, length: plotWidth), y1: cy,
                            x2: scale.position(interval.upper, from: plotLeft, length: plotWidth), y2: cy, class: side)
                canvas.circle(cx: scale.position(rate, from: plotLeft, length: plotWidth), cy: cy, r: 3.5, class: side,
                              title: "\(side) \(metric.metric.label): \(estimate.successes) of \(estimate.trials), "
                                  + ReportText.rate(estimate))
            }
        }
        return canvas.markup
    }
}
