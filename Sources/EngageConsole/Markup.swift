import EngageCore
import Foundation

/// Escaping and small pieces of markup shared by every page. Every text that comes from data
/// (app ids, categories, experiment names, rationales) passes through `text`.
enum Markup {
    /// `&`, `<`, `>`, `"` and `'` as character references: safe in text and in quoted attributes.
    static func text(_ value: String) -> String { ReportText.html(value) }

    /// A number as a data attribute value: the shortest text that reads back as the same Double
    /// (what `engage report --format json` writes), or empty when undefined.
    static func number(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "" }
        return value.description
    }

    /// `<a href="...">label</a>`; `href` is escaped here.
    static func link(_ href: String, _ label: String, current: Bool = false) -> String {
        "<a href=\"\(text(href))\"" + (current ? " aria-current=\"page\"" : "") + ">\(text(label))</a>"
    }

    /// `<td>` cells of already-escaped markup.
    static func cells(_ values: [String]) -> String {
        values.map { "<td>\($0)</td>" }.joined()
    }

    /// A hidden form field.
    static func hidden(_ name: String, _ value: String) -> String {
        "<input type=\"hidden\" name=\"\(text(name))\" value=\"\(text(value))\">"
    }
}

/// Paths and query strings of console links.
public enum ConsolePath {
    public static let base = "/console"
    public static let report = "/console/report"
    public static let telemetry = "/console/extension"
    public static let experiments = "/console/experiments"
    public static let health = "/console/ingestion"
    public static let login = "/console/login"
    public static let logout = "/console/logout"

    public static func experiment(_ id: String) -> String { experiments + "/" + percentEncoded(id) }
    public static func start(_ id: String) -> String { experiment(id) + "/start" }
    public static func stop(_ id: String) -> String { experiment(id) + "/stop" }

    /// `path?name=value&...` with the values percent-encoded; nil values are left out. A path
    /// with a query already gets the items after it, and one with a fragment before it (after
    /// the fragment the browser would never send them).
    public static func with(_ path: String, _ query: [(String, String?)]) -> String {
        let items = query.compactMap { name, value in value.map { percentEncoded(name) + "=" + percentEncoded($0) } }
        guard !items.isEmpty else { return path }
        let fragment = path.firstIndex(of: "#") ?? path.endIndex
        let beforeFragment = path[..<fragment]
        return beforeFragment + (beforeFragment.contains("?") ? "&" : "?") + items.joined(separator: "&") + path[fragment...]
    }

    /// True when the path's query has a parameter `name` (with a value or not).
    public static func hasParameter(_ name: String, in path: String) -> Bool {
        let beforeFragment = path.prefix { $0 != "#" }
        guard let query = beforeFragment.split(separator: "?", maxSplits: 1).dropFirst().first else { return false }
        return query.split(separator: "&").contains { $0.prefix { $0 != "=" } == name }
    }

    /// Everything but RFC 3986's unreserved characters percent-encoded.
    public static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(UnicodeScalar(byte))
            default:
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// True for a path of this console that a login may send the browser back to: never
    /// another site (`//host`, `https:`), never a path with a scheme, a backslash or a dot segment
    /// (which browsers resolve, `%2e` too, to leave the console).
    public static func isLocal(_ target: String) -> Bool {
        let path = target.prefix { $0 != "?" && $0 != "#" }
        let dotSegment = path.split(separator: "/").contains { segment in
            let lowered = segment.lowercased().replacingOccurrences(of: "%2e", with: ".")
            return lowered == "." || lowered == ".."
        }
        return (target == "/" || target.hasPrefix(base + "/") || target.hasPrefix(base + "?") || target == base)
            && !dotSegment && !target.contains("\\") && !target.contains("//") && !target.contains(":")
            && target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
