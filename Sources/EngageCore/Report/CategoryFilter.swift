import Foundation

/// A category given to filter a report (a query parameter, a command-line option), made
/// comparable with the categories ingestion stored: those are NFC-normalised and hold no control
/// character (`EventDecoder`), so a filter is normalised the same way, and one holding a control
/// character (a NUL, which PostgreSQL text cannot hold, among them) can match nothing and is
/// refused as the caller's mistake rather than read as a database failure.
public enum CategoryFilter {
    /// What a refused filter is told.
    public static let requirement = "category must name a notification category such as new_photo, without control characters"

    /// The filter as stored categories are written; nil when empty or holding a control character.
    public static func normalized(_ value: String) -> String? {
        guard !value.isEmpty, !value.unicodeScalars.contains(where: isControl) else { return nil }
        return value.precomposedStringWithCanonicalMapping
    }

    /// C0 and C1 controls and DEL, which no stored category holds. (Not the bidirectional
    /// controls ingestion refuses now: categories stored before hold some, and can be filtered.)
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        default: false
        }
    }
}
