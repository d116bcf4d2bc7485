/// One inline `<svg>` element built from a few primitives, for the report's page and the
/// console's. Coordinates are user units with one decimal; every text passes through
/// `HTMLText.escape`. How a shape is coloured is its `SVGStyle`: inline colours on a page that
/// carries its own (the report), or classes of the page's stylesheet (the console, so that dark
/// mode reaches its charts).
public struct SVGCanvas: Sendable {
    public let width: Double
    public let height: Double
    /// Read by screen readers (`aria-label`) and shown as the tooltip of the whole chart.
    public let label: String
    /// The class of the `<svg>` element: the stylesheet sizes it to the page. Without one the
    /// chart is drawn at its own width and height.
    public let cssClass: String?
    private var body: [String] = []

    public init(width: Double, height: Double, label: String, cssClass: String? = nil) {
        self.width = width
        self.height = height
        self.label = label
        self.cssClass = cssClass
    }

    public static func number(_ value: Double) -> String { ReportFormat.fixed(value, 1) }

    private static func points(_ points: [(x: Double, y: Double)]) -> String {
        points.map { number($0.x) + "," + number($0.y) }.joined(separator: " ")
    }

    private mutating func element(_ name: String, _ attributes: String, title: String?) {
        guard let title else { return body.append("<\(name) \(attributes)/>") }
        body.append("<\(name) \(attributes)><title>" + HTMLText.escape(title) + "</title></\(name)>")
    }

    public mutating func rect(x: Double, y: Double, width: Double, height: Double, _ style: SVGStyle, title: String? = nil) {
        element("rect", "x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" width=\"\(Self.number(max(0, width)))\" "
            + "height=\"\(Self.number(max(0, height)))\"" + style.attributes, title: title)
    }

    public mutating func line(x1: Double, y1: Double, x2: Double, y2: Double, _ style: SVGStyle) {
        element("line", "x1=\"\(Self.number(x1))\" y1=\"\(Self.number(y1))\" x2=\"\(Self.number(x2))\" "
            + "y2=\"\(Self.number(y2))\"" + style.attributes, title: nil)
    }

    public mutating func circle(cx: Double, cy: Double, r: Double, _ style: SVGStyle, title: String? = nil) {
        element("circle", "cx=\"\(Self.number(cx))\" cy=\"\(Self.number(cy))\" r=\"\(Self.number(r))\"" + style.attributes,
                title: title)
    }

    /// A closed shape through `points` (the forest plot's diamond, a marker).
    public mutating func polygon(_ points: [(x: Double, y: Double)], _ style: SVGStyle, title: String? = nil) {
        element("polygon", "points=\"\(Self.points(points))\"" + style.attributes, title: title)
    }

    /// An open line through `points` (a sparkline).
    public mutating func polyline(_ points: [(x: Double, y: Double)], _ style: SVGStyle = .none) {
        element("polyline", "points=\"\(Self.points(points))\"" + style.attributes, title: nil)
    }

    public enum Anchor: String, Sendable { case start, middle, end }

    public mutating func text(_ text: String, x: Double, y: Double, anchor: Anchor = .start, _ style: SVGStyle = .none,
                              bold: Bool = false) {
        body.append("<text x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" text-anchor=\"\(anchor.rawValue)\""
            + style.attributes + (bold ? " font-weight=\"600\"" : "") + ">" + HTMLText.escape(text) + "</text>")
    }

    public var markup: String {
        let size = cssClass == nil ? " width=\"\(Self.number(width))\" height=\"\(Self.number(height))\"" : ""
        return "<svg" + (cssClass.map { " class=\"\(HTMLText.escape($0))\"" } ?? "")
            + " viewBox=\"0 0 \(Self.number(width)) \(Self.number(height))\"" + size
            + " role=\"img\" aria-label=\"\(HTMLText.escape(label))\"><title>" + HTMLText.escape(label) + "</title>"
            + body.joined() + "</svg>"
    }
}

/// The presentation attributes of one SVG element, written after its geometry in the order they
/// are combined (`+`).
public struct SVGStyle: Sendable {
    public let attributes: String

    public static let none = SVGStyle(attributes: "")

    /// Any attribute, its value escaped.
    public static func attribute(_ name: String, _ value: String) -> SVGStyle {
        SVGStyle(attributes: " \(name)=\"\(HTMLText.escape(value))\"")
    }

    /// A class of the page's stylesheet.
    public static func cssClass(_ name: String) -> SVGStyle { SVGStyle(attributes: " class=\"\(name)\"") }

    public static func fill(_ colour: String) -> SVGStyle { SVGStyle(attributes: " fill=\"\(colour)\"") }

    public static func fill(_ colour: String, stroke: String) -> SVGStyle {
        SVGStyle(attributes: " fill=\"\(colour)\" stroke=\"\(stroke)\"")
    }

    public static func stroke(_ colour: String, width: Double = 1, dashed: Bool = false) -> SVGStyle {
        SVGStyle(attributes: " stroke=\"\(colour)\" stroke-width=\"\(SVGCanvas.number(width))\""
            + (dashed ? " stroke-dasharray=\"3 3\"" : ""))
    }

    public static func font(size: Double, fill: String = "#222") -> SVGStyle {
        SVGStyle(attributes: " font-size=\"\(SVGCanvas.number(size))\" fill=\"\(fill)\"")
    }

    /// Rounded corners of a rectangle; none for 0.
    public static func cornerRadius(_ radius: Double) -> SVGStyle {
        SVGStyle(attributes: radius > 0 ? " rx=\"\(SVGCanvas.number(radius))\"" : "")
    }

    public static func + (first: SVGStyle, second: SVGStyle) -> SVGStyle {
        SVGStyle(attributes: first.attributes + second.attributes)
    }
}
