import Foundation

/// Escaping for HTML text and attribute values (also used inside inline SVG).
enum HTMLText {
    /// `&`, `<`, `>`, `"` and `'` as character references.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}

/// One inline `<svg>` element built from a few primitives. Coordinates are user units with one
/// decimal; every text passes through `HTMLText.escape`.
struct SVGCanvas {
    let width: Double
    let height: Double
    /// Read by screen readers (`aria-label`) and shown as the tooltip of the whole chart.
    let label: String
    private var body: [String] = []

    init(width: Double, height: Double, label: String) {
        self.width = width
        self.height = height
        self.label = label
    }

    static func number(_ value: Double) -> String { ReportFormat.fixed(value, 1) }

    private static func tooltip(_ title: String?) -> String {
        title.map { "<title>" + HTMLText.escape($0) + "</title>" } ?? ""
    }

    mutating func rect(x: Double, y: Double, width: Double, height: Double, fill: String, title: String? = nil,
                       cornerRadius: Double = 0) {
        let radius = cornerRadius > 0 ? " rx=\"\(Self.number(cornerRadius))\"" : ""
        let attributes = "x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" width=\"\(Self.number(max(0, width)))\" "
            + "height=\"\(Self.number(max(0, height)))\" fill=\"\(fill)\"" + radius
        body.append(title == nil ? "<rect \(attributes)/>" : "<rect \(attributes)>\(Self.tooltip(title))</rect>")
    }

    mutating func line(x1: Double, y1: Double, x2: Double, y2: Double, stroke: String, width: Double = 1,
                       dashed: Bool = false) {
        body.append("<line x1=\"\(Self.number(x1))\" y1=\"\(Self.number(y1))\" x2=\"\(Self.number(x2))\" "
            + "y2=\"\(Self.number(y2))\" stroke=\"\(stroke)\" stroke-width=\"\(Self.number(width))\""
            + (dashed ? " stroke-dasharray=\"3 3\"" : "") + "/>")
    }

    mutating func circle(cx: Double, cy: Double, r: Double, fill: String, stroke: String = "none", title: String? = nil) {
        let attributes = "cx=\"\(Self.number(cx))\" cy=\"\(Self.number(cy))\" r=\"\(Self.number(r))\" fill=\"\(fill)\" "
            + "stroke=\"\(stroke)\""
        body.append(title == nil ? "<circle \(attributes)/>" : "<circle \(attributes)>\(Self.tooltip(title))</circle>")
    }

    /// A closed shape through `points` (the forest plot's diamond).
    mutating func polygon(_ points: [(x: Double, y: Double)], fill: String, title: String? = nil) {
        let list = points.map { Self.number($0.x) + "," + Self.number($0.y) }.joined(separator: " ")
        let attributes = "points=\"\(list)\" fill=\"\(fill)\""
        body.append(title == nil ? "<polygon \(attributes)/>" : "<polygon \(attributes)>\(Self.tooltip(title))</polygon>")
    }

    enum Anchor: String { case start, middle, end }

    mutating func text(_ text: String, x: Double, y: Double, anchor: Anchor = .start, size: Double = 12,
                       fill: String = "#222", bold: Bool = false) {
        body.append("<text x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" text-anchor=\"\(anchor.rawValue)\" "
            + "font-size=\"\(Self.number(size))\" fill=\"\(fill)\"" + (bold ? " font-weight=\"600\"" : "") + ">"
            + HTMLText.escape(text) + "</text>")
    }

    var markup: String {
        "<svg viewBox=\"0 0 \(Self.number(width)) \(Self.number(height))\" width=\"\(Self.number(width))\" "
            + "height=\"\(Self.number(height))\" role=\"img\" aria-label=\"\(HTMLText.escape(label))\">"
            + "<title>" + HTMLText.escape(label) + "</title>" + body.joined() + "</svg>"
    }
}

/// The colours of the page (Okabe–Ito, distinguishable with the common colour-vision deficiencies).
enum ReportPalette {
    static let rich = "#0072B2"
    static let plain = "#E69F00"
    static let grid = "#e3e3e3"
    static let axis = "#888"
    static let muted = "#666"
    static let download = "#009E73"
    static let processing = "#CC79A7"

    static func outcome(_ outcome: DeliveryOutcome) -> String {
        switch outcome {
        case .attached: "#009E73"
        case .timeout: "#D55E00"
        case .tooLarge: "#CC79A7"
        case .unsupportedFormat: "#F0E442"
        case .downloadFailed: "#56B4E9"
        case .notRequested: "#BBBBBB"
        }
    }
}

/// A linear axis from 0 to a round maximum with evenly spaced ticks, for rates.
struct RateAxis {
    let maximum: Double
    let step: Double

    /// The smallest round axis that shows `value` (0...1).
    init(covering value: Double) {
        let choices: [(Double, Double)] = [(0.05, 0.01), (0.1, 0.02), (0.2, 0.05), (0.3, 0.05), (0.5, 0.1),
                                           (0.75, 0.25), (1, 0.2)]
        let choice = choices.first { value <= $0.0 } ?? (1, 0.2)
        maximum = choice.0
        step = choice.1
    }

    var ticks: [Double] {
        let count = Int((maximum / step).rounded())
        return (0...count).map { Double($0) * step }
    }

    func position(_ value: Double, left: Double, width: Double) -> Double {
        left + min(max(value, 0), maximum) / maximum * width
    }
}

/// A base-10 logarithmic axis in milliseconds between two powers of ten, for latencies.
struct LogAxis {
    let lowerExponent: Int
    let upperExponent: Int

    /// Covers `values` (milliseconds); nil when there are none.
    init?(covering values: [Double]) {
        let positive = values.filter { $0 > 0 && $0.isFinite }
        guard let smallest = positive.min(), let largest = positive.max() else { return nil }
        var lower = 0
        while Self.power(lower) > smallest { lower -= 1 }
        while Self.power(lower + 1) <= smallest { lower += 1 }
        var upper = lower + 1
        while Self.power(upper) < largest { upper += 1 }
        lowerExponent = lower
        upperExponent = upper
    }

    static func power(_ exponent: Int) -> Double {
        var value = 1.0
        if exponent >= 0 { for _ in 0..<exponent { value *= 10 } } else { for _ in 0..<(-exponent) { value /= 10 } }
        return value
    }

    var ticks: [Double] { (lowerExponent...upperExponent).map(Self.power) }

    func position(_ value: Double, left: Double, width: Double) -> Double {
        let low = Double(lowerExponent)
        let high = Double(upperExponent)
        let exponent = min(max(log10(max(value, Self.power(lowerExponent))), low), high)
        return left + (exponent - low) / (high - low) * width
    }

    static func label(_ milliseconds: Double) -> String {
        milliseconds >= 1000 ? ReportFormat.fixed(milliseconds / 1000, 0) + " s"
            : ReportFormat.fixed(milliseconds, milliseconds < 1 ? 1 : 0) + " ms"
    }
}
