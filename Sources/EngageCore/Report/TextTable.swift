/// Columns of text for a terminal: padded to a common width by character count, two spaces
/// apart, trailing spaces trimmed.
public struct TextTable: Sendable {
    public enum Alignment: Sendable { case left, right }

    public var alignments: [Alignment]
    public var rows: [[String]] = []

    public init(_ alignments: [Alignment]) {
        self.alignments = alignments
    }

    /// A table of left-aligned columns whose first row is `header`.
    public init(header: [String]) {
        self.init(header.map { _ in .left })
        rows.append(header)
    }

    public mutating func append(_ row: [String]) {
        rows.append(row)
    }

    public func lines(indent: String = "") -> [String] {
        var widths = Array(repeating: 0, count: alignments.count)
        for row in rows {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], cell.count)
            }
        }
        return rows.map { row in
            var line = indent
            for (column, cell) in row.enumerated() where column < widths.count {
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                if column > 0 { line += "  " }
                line += alignments[column] == .left ? cell + padding : padding + cell
            }
            while line.last == " " { line.removeLast() }
            return line
        }
    }

    /// The lines joined, without a final line break.
    public func render() -> String {
        lines().joined(separator: "\n")
    }
}
