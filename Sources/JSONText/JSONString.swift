/// JSON string literals (RFC 8259) as every part of the server writes them: HTTP problem
/// bodies, reports and stored payloads, JSON log lines.
///
/// `"` and `\` are escaped; control characters become `\b \f \n \r \t` or `\u00XX` (lowercase
/// hex); everything else, DEL, U+2028 and all non-ASCII included, is copied as UTF-8. This is the
/// canonical form of RFC 8785 (and what ECMAScript's JSON.stringify writes), so equal strings
/// always encode to equal bytes. EngageClient writes the same form with its own copy (the client
/// links nothing of the server); a test keeps the two equal.
public enum JSONString {
    /// Appends `text` as a quoted, escaped JSON string.
    public static func append(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                out.append(byte)
                continue
            }
            out.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
            case 0x08: out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "f"))
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            default: out.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30, hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `text` as a quoted, escaped JSON string, e.g. `"a\"b"`.
    public static func render(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 2)
        append(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
