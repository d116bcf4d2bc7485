import Foundation

/// An identifier (a category, an arm's name, a device id) written as ingestion stores it, for
/// text that reaches engage another way (an experiment's definition, an assignment query) and must
/// match the log byte for byte: PostgreSQL and the replay compare bytes, Swift's `String` compares
/// canonically equivalent text as equal (see `EventDecoder`).
public enum IdentifierText {
    /// `text` in Unicode normalization form C, as ingestion stores it.
    public static func normalized(_ text: String) -> String {
        text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCanonicalMapping
    }

    /// `text` as ingestion would store it, or nil where ingestion refuses it: empty, longer than
    /// `maxBytes` before or after normalising (a few characters grow when composed: U+0958 is two
    /// scalars), or holding a refused character. For an identifier an answer hands out (an
    /// assignment) that the device's events must then be able to carry.
    public static func storable(_ text: String, maxBytes: Int) -> String? {
        guard !text.isEmpty, text.utf8.count <= maxBytes, !holdsRefusedCharacter(text) else { return nil }
        let stored = normalized(text)
        return stored.utf8.count <= maxBytes ? stored : nil
    }

    /// What a refused identifier is told (as an event's field is).
    public static let refusedCharacterProblem = "must not contain control characters"

    /// Whether ingestion refuses `text` on the wire: a C0 or C1 control character, DEL, or a
    /// bidirectional embedding, override or isolate.
    public static func holdsRefusedCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
            default: false
            }
        }
    }
}
