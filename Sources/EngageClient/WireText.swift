import Foundation

/// The server's rule for a name in an event (category, notification id, experiment and arm,
/// variant): 1 to `maxBytes` bytes of UTF-8, composed (NFC) too, without control characters (C0,
/// DEL, C1) and without bidirectional embeddings, overrides or isolates. The server refuses an
/// event with any other, so a name the client did not choose itself (a push payload's) is
/// checked before an event carries it.
enum WireText {
    static func isAcceptable(_ text: String, maxBytes: Int) -> Bool {
        let count = text.utf8.count
        guard count >= 1, count <= maxBytes, !text.unicodeScalars.contains(where: isRefused) else { return false }
        return text.precomposedStringWithCanonicalMapping.utf8.count <= maxBytes
    }

    private static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
