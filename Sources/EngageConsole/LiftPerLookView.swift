import EngageCore

/// The relative lift of one treatment arm on one metric at every look: the estimate as a dot,
/// the fixed-horizon interval (at the comparison's level) as a thick bar, the sequential (always-valid) interval as a
/// thin one beside it, and a dashed line at no effect; then the same as a table.
///
/// The sequential interval and its p-value are those of the log ratio of means, which decisions
/// read (`ExperimentLook.Comparison.logRatio`), around the same estimate: gbstats' sequential
/// interval on the relative scale lies lower, and beside a "ship" it could still cross 0.
struct LiftPerLookView {
    var looks: [ExperimentLook]
    var arm: String
    var metric: String
    /// The experiment's level, against which p-values are rounded.
    var alpha: Double

    private let layout = ChartLayout.consoleLiftPerLook

    var markup: String {
        let points = looks.compactMap { look in look.comparison(arm: arm, metric: metric).map { (look, $0) } }
        var html = "<section class=\"card\"><h2>\(Markup.text(arm)): relative lift in \(Markup.text(metric)) per look</h2>"
        guard !points.isEmpty else { return html + "<p>No look compared this arm yet.</p></section>" }
        html += "<p class=\"small muted\"><span class=\"key fixed\"></span>fixed-horizon interval (its level in the table)"
            + "<span class=\"key sequential\"></span>sequential interval of the log ratio (valid at every look; what decisions "
            + "use) · dashed: no effect</p>"
        html += chart(points)
        html += "<details><summary>Every look</summary><div class=\"scroll\"><table class=\"looks\"><thead><tr><th>look</th>"
            + "<th>analysed</th><th>decision</th><th>control</th><th>treatment</th><th>relative lift</th><th>fixed interval</th>"
            + "<th>sequential</th><th>p (fixed)</th><th>p (sequential)</th><th>chance to win</th></tr></thead><tbody>"
        for (look, comparison) in points.reversed() {
            let lift = comparison.relative
            html += "<tr data-look=\"\(look.look)\" data-estimate=\"\(Markup.number(lift?.estimate))\">" + Markup.cells([
                String(look.look), Markup.text(look.analyzedAt), Markup.text(look.decisionText),
                Markup.text(ExperimentView.rate(comparison.control)), Markup.text(ExperimentView.rate(comparison.variant)),
                Markup.text(lift.map { ReportText.signed($0.estimate * 100, 1) + "%" } ?? (comparison.unavailable ?? ReportText.missing)),
                Markup.text(ExperimentView.interval(lift?.fixed, level: comparison.confidence)),
                Markup.text(ExperimentView.interval(comparison.logRatio?.sequential)),
                Markup.text(ReportText.pValue(lift?.fixed?.pValue, alpha: alpha) + ExperimentView.correction(comparison.pValueCorrection)),
                Markup.text(ReportText.pValue(comparison.logRatio?.sequential?.pValue, alpha: alpha)),
                Markup.text(ReportText.percent(lift?.chanceToWin)),
            ]) + "</tr>"
        }
        return html + "</tbody></table></div></details></section>"
    }

    private func chart(_ points: [(ExperimentLook, ExperimentLook.Comparison)]) -> String {
        let lifts = points.compactMap(\.1.relative)
        // Early sequential intervals are very wide: the scale follows the fixed intervals and the
        // estimates, and a sequential bar beyond it is cut at the edge.
        var shown = lifts.flatMap { [$0.estimate, $0.fixed?.lower, $0.fixed?.upper].compactMap { $0 } }
        let spread = max((shown.max() ?? 0) - (shown.min() ?? 0), 0.05)
        shown += points.compactMap(\.1.logRatio?.sequential).flatMap { [$0.lower, $0.upper] }
            .map { min(max($0, (shown.min() ?? 0) - spread), (shown.max() ?? 0) + spread) }
        let scale = ChartScale(covering: shown, including: [0], ticks: 5)
        let (left, right, plotWidth) = (layout.plotLeft, layout.plotRight, layout.plotWidth)
        let plotBottom = layout.plotBottom(rows: 1)
        var canvas = SVGCanvas(width: layout.width, height: layout.height(rows: 1), label: "Relative lift of \(arm) in \(metric) at "
                                   + "each look, with fixed and sequential intervals", cssClass: "chart")
        func y(_ value: Double) -> Double { plotBottom - scale.position(value, from: 0, length: layout.rowHeight) }
        for tick in scale.ticks {
            canvas.line(x1: left, y1: y(tick), x2: right, y2: y(tick), .cssClass("grid"))
            canvas.text((tick > 1e-12 ? "+" : "") + scale.label(tick, times: 100) + "%", x: left - 4, y: y(tick) + 4, anchor: .end, .cssClass("muted"))
        }
        canvas.line(x1: left, y1: y(0), x2: right, y2: y(0), .cssClass("zero"))
        let slot = plotWidth / Double(points.count)
        for (index, (look, comparison)) in points.enumerated() {
            let x = left + slot * (Double(index) + 0.5)
            if points.count <= 12 || index % max(1, points.count / 8) == 0 {
                canvas.text(String(look.look), x: x, y: plotBottom + 15, anchor: .middle, .cssClass("muted"))
            }
            guard let lift = comparison.relative else { continue }
            let sequential = comparison.logRatio?.sequential
            if let sequential {
                canvas.line(x1: x + min(4, slot / 4), y1: y(sequential.lower), x2: x + min(4, slot / 4), y2: y(sequential.upper),
                            .cssClass("sequential"))
            }
            if let fixed = lift.fixed {
                canvas.line(x1: x, y1: y(fixed.lower), x2: x, y2: y(fixed.upper), .cssClass("fixed"))
            }
            canvas.circle(cx: x, cy: y(lift.estimate), r: min(3.5, max(1.5, slot / 3)), .cssClass("fixed"),
                          title: "look \(look.look): \(ReportText.signed(lift.estimate * 100, 1))%, fixed "
                              + ExperimentView.interval(lift.fixed) + ", sequential " + ExperimentView.interval(sequential))
        }
        canvas.text("look", x: right, y: plotBottom + 15, anchor: .end, .cssClass("muted"))
        return canvas.markup
    }
}
