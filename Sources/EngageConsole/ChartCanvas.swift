import EngageCore

/// One inline `<svg class="chart">`: a few primitives whose colours come from CSS classes of the
/// stylesheet (so dark mode reaches them), scaled to the page's width by its `viewBox`. Every
/// text passes through `Markup.text`.
struct ChartCanvas {
    let width: Double
    let height: Double
    /// Read by screen readers and shown as the chart's tooltip.
    let label: String
    private var parts: [String] = []

    init(width: Double, height: Double, label: String) {
        self.width = width
        self.height = height
        self.label = label
    }

    static func number(_ value: Double) -> String { ReportText.fixed(value, 1) }

    private static func tooltip(_ title: String?) -> String {
        title.map { "<title>" + Markup.text($0) + "</title>" } ?? ""
    }

    private static func element(_ name: String, _ attributes: String, title: String?) -> String {
        title == nil ? "<\(name) \(attributes)/>" : "<\(name) \(attributes)>\(tooltip(title))</\(name)>"
    }

    mutating func line(x1: Double, y1: Double, x2: Double, y2: Double, class name: String) {
        parts.append("<line x1=\"\(Self.number(x1))\" y1=\"\(Self.number(y1))\" x2=\"\(Self.number(x2))\" "
            + "y2=\"\(Self.number(y2))\" class=\"\(name)\"/>")
    }

    mutating func rect(x: Double, y: Double, width: Double, height: Double, class name: String, title: String? = nil) {
        parts.append(Self.element("rect", "x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" width=\"\(Self.number(max(0, width)))\" "
            + "height=\"\(Self.number(max(0, height)))\" rx=\"2\" class=\"\(name)\"", title: title))
    }

    mutating func circle(cx: Double, cy: Double, r: Double, class name: String, title: String? = nil) {
        parts.append(Self.element("circle", "cx=\"\(Self.number(cx))\" cy=\"\(Self.number(cy))\" r=\"\(Self.number(r))\" "
            + "class=\"\(name)\"", title: title))
    }

    /// A closed shape through `points` (a diamond, a marker).
    mutating func polygon(_ points: [(Double, Double)], class name: String, title: String? = nil) {
        let list = points.map { Self.number($0.0) + "," + Self.number($0.1) }.joined(separator: " ")
        parts.append(Self.element("polygon", "points=\"\(list)\" class=\"\(name)\"", title: title))
    }

    mutating func polyline(_ points: [(Double, Double)]) {
        let list = points.map { Self.number($0.0) + "," + Self.number($0.1) }.joined(separator: " ")
        parts.append("<polyline points=\"\(list)\"/>")
    }

    enum Anchor: String { case start, middle, end }

    mutating func text(_ value: String, x: Double, y: Double, anchor: Anchor = .start, muted: Bool = false, bold: Bool = false) {
        parts.append("<text x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" text-anchor=\"\(anchor.rawValue)\""
            + (muted ? " class=\"muted\"" : "") + (bold ? " font-weight=\"600\"" : "") + ">" + Markup.text(value) + "</text>")
    }

    var markup: String {
        "<svg class=\"chart\" viewBox=\"0 0 \(Self.number(width)) \(Self.number(height))\" role=\"img\" "
            + "aria-label=\"\(Markup.text(label))\"><title>\(Markup.text(label))</title>" + parts.joined() + "</svg>"
    }
}

/// A linear scale over a range of values with round ticks (1, 2, 2.5 or 5 times a power of ten),
/// mapped onto a span of the chart.
struct ChartScale {
    let lower: Double
    let upper: Double
    let step: Double

    /// The smallest round scale covering `values`, `including` a value that must show (0, the
    /// line of no effect); about `ticks` ticks.
    init(covering values: [Double], including fixed: [Double] = [], ticks: Int = 5) {
        let all = (values + fixed).filter(\.isFinite)
        var low = all.min() ?? 0
        var high = all.max() ?? 1
        if high - low < 1e-12 {
            low -= 0.5
            high += 0.5
        }
        let raw = (high - low) / Double(max(ticks, 1))
        var power = 1.0
        while power * 10 <= raw { power *= 10 }
        while power > raw { power /= 10 }
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * power }.first { $0 >= raw } ?? power * 10
        self.step = step
        lower = (low / step).rounded(.down) * step
        upper = (high / step).rounded(.up) * step
    }

    var ticks: [Double] {
        let count = Int(((upper - lower) / step).rounded())
        return (0...count).map { lower + Double($0) * step }
    }

    /// A tick's value times `factor` (100 for percent), with a decimal only when the step needs one.
    func label(_ tick: Double, times factor: Double = 1) -> String {
        let scaledStep = step * factor
        return ReportText.fixed(tick * factor, abs(scaledStep - scaledStep.rounded()) > 1e-9 ? 1 : 0)
    }

    func position(_ value: Double, from start: Double, length: Double) -> Double {
        start + (min(max(value, lower), upper) - lower) / (upper - lower) * length
    }
}
