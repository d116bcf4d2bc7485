import Foundation

/// Escaping for HTML text and attribute values (also used inside inline SVG).
enum HTMLText {
    /// `&`, `<`, `>`, `"` and `'` as character references. Scalar by scalar: a quote followed by
    /// a combining mark is one Swift `Character` equal to no quote, and left whole it ended an
    /// attribute value (text from the data could add an event handler).
    static func escape(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&#39;".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
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

    func position(_ value: Double, from start: Double, length: Double) -> Double {
        let low = Double(lowerExponent)
        let high = Double(upperExponent)
        let exponent = min(max(log10(max(value, Self.power(lowerExponent))), low), high)
        return start + (exponent - low) / (high - low) * length
    }

    static func label(_ milliseconds: Double) -> String {
        milliseconds >= 1000 ? ReportFormat.fixed(milliseconds / 1000, 0) + " s"
            : ReportFormat.fixed(milliseconds, milliseconds < 1 ? 1 : 0) + " ms"
    }
}

extension SVGStyle {
    /// The report's secondary text: axis labels, notes, placeholders.
    static func mutedText(size: Double) -> SVGStyle { .font(size: size, fill: ReportPalette.muted) }
}
