/// Why a byte sequence is not acceptable JSON, and where.
///
/// `offset` is a byte offset into the parsed buffer (for `JSON.parse(_:range:maxDepth:)` it is
/// still an offset into the whole buffer, not into the range). The offset points at:
/// - the offending byte for unexpected characters, control characters and trailing data;
/// - the first byte of the sequence for invalid UTF-8;
/// - the backslash for bad escapes (for a surrogate pair, the backslash of the first half);
/// - the first byte of the number for malformed numbers (including leading zeros);
/// - the opening quote of the second key for duplicate keys;
/// - the bracket that opens one level too many for nesting errors;
/// - the end of the input for "unexpected end of input".
public struct JSONError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Byte offset into the input buffer.
    public var offset: Int
    /// A short human-readable explanation, e.g. `duplicate key "type"`.
    public var reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSONError {
    static func unexpectedEnd(at offset: Int) -> JSONError {
        JSONError(offset: offset, reason: "unexpected end of input")
    }

    static func unexpected(_ byte: UInt8, at offset: Int) -> JSONError {
        JSONError(offset: offset, reason: "unexpected \(describe(byte))")
    }

    static func expected(_ what: String, found byte: UInt8, at offset: Int) -> JSONError {
        JSONError(offset: offset, reason: "expected \(what) but found \(describe(byte))")
    }

    /// `character 'x'` for printable ASCII, `byte 0x0A` otherwise.
    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F {
            return "character '\(Character(Unicode.Scalar(byte)))'"
        }
        return "byte 0x\(hex2(byte))"
    }

    static func hex2(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
