/// A parsed, strictly validated JSON document.
///
/// The document keeps the input bytes and a flat *tape* of tokens in document order (pre-order):
/// a container's token is followed by its members (for objects: key token, then value tokens).
/// Nothing is unescaped or converted until asked for, so parsing allocates two arrays and no
/// per-value objects. Values are addressed by `JSON.Node`, a plain index into the tape.
///
/// Strictness (RFC 8259 plus the needs of PostgreSQL `jsonb`): one value with optional surrounding
/// whitespace; no leading zeros, `NaN` or `Infinity`; strings must be valid UTF-8 (no overlong
/// forms, no UTF-8-encoded surrogates, no truncated sequences) without raw control characters;
/// `\u` escapes must not be lone surrogates nor `\u0000`; keys are unique within each object;
/// nesting is limited to `maxDepth` levels (an explicit stack, so hostile depth cannot overflow
/// the call stack).
public struct JSON: Sendable {
    /// The whole buffer the document was parsed from (a range of it for `parse(_:range:maxDepth:)`).
    public let bytes: [UInt8]
    @usableFromInline let tape: [Token]

    /// The top-level value.
    public var root: Node { Node(0) }

    /// Parses `bytes` as one JSON value.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 32) throws(JSONError) -> JSON {
        try parse(bytes, range: 0..<bytes.count, maxDepth: maxDepth)
    }

    /// Parses the bytes in `range` as one JSON value; offsets (in errors and byte ranges) stay
    /// relative to the whole of `bytes`, so lines of NDJSON need not be copied out.
    public static func parse(_ bytes: [UInt8], range: Range<Int>, maxDepth: Int = 32) throws(JSONError) -> JSON {
        guard bytes.count <= Int(UInt32.max) else {
            throw JSONError(offset: 0, reason: "input is larger than 4 GiB")
        }
        var parser = Parser(bytes: bytes, range: range, maxDepth: max(1, min(maxDepth, Int(UInt16.max))))
        try parser.parseDocument()
        return JSON(bytes: bytes, tape: parser.tape)
    }
}

// MARK: - Tokens

extension JSON {
    /// A position in the document. Only meaningful for the document that produced it.
    public struct Node: Hashable, Sendable {
        public let index: Int
        @inlinable init(_ index: Int) { self.index = index }
    }

    public enum Kind: Sendable, Equatable {
        case null, bool, number, string, array, object
    }

    @usableFromInline
    struct Token: Sendable {
        @usableFromInline enum Tag: UInt8, Sendable {
            case null, falseValue, trueValue, number, string, array, object
        }
        static let escapedFlag: UInt8 = 1
        static let integerFlag: UInt8 = 2

        @usableFromInline var tag: Tag
        /// `escapedFlag` for strings containing a backslash, `integerFlag` for numbers
        /// without fraction or exponent.
        @usableFromInline var flags: UInt8
        /// Nesting level: 0 for the root, 1 for its members, ...
        @usableFromInline var depth: UInt16
        /// Byte range of the value's source text (quotes and brackets included).
        @usableFromInline var start: UInt32
        @usableFromInline var end: UInt32
        /// Tape index just past this value's subtree (the next sibling, if any).
        @usableFromInline var next: UInt32
    }
}

// MARK: - Reading values

extension JSON {
    @inlinable func token(_ node: Node) -> Token { tape[node.index] }

    public func kind(_ node: Node) -> Kind {
        switch tape[node.index].tag {
        case .null: .null
        case .falseValue, .trueValue: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }

    /// The byte range of the value's source text in `bytes` (for strings, quotes included;
    /// for containers, brackets included). Copy it to store a value verbatim.
    public func byteRange(_ node: Node) -> Range<Int> {
        let t = tape[node.index]
        return Int(t.start)..<Int(t.end)
    }

    /// The value's source text, verbatim.
    public func rawBytes(_ node: Node) -> [UInt8] {
        Array(bytes[byteRange(node)])
    }

    /// The nesting depth of the node (root is 0).
    public func depth(_ node: Node) -> Int { Int(tape[node.index].depth) }

    /// The deepest nesting level found in the node's subtree, counting the node's own level as 1
    /// when it is a container (a scalar has 0).
    public func nestingLevels(_ node: Node) -> Int {
        let first = tape[node.index]
        guard first.tag == .array || first.tag == .object else { return 0 }
        var deepest = first.depth
        var i = node.index + 1
        let stop = Int(first.next)
        while i < stop {
            let t = tape[i]
            if (t.tag == .array || t.tag == .object) && t.depth > deepest { deepest = t.depth }
            i += 1
        }
        return Int(deepest - first.depth) + 1
    }

    public func isNull(_ node: Node) -> Bool { tape[node.index].tag == .null }

    public func bool(_ node: Node) -> Bool? {
        switch tape[node.index].tag {
        case .trueValue: true
        case .falseValue: false
        default: nil
        }
    }

    // MARK: Strings

    /// True when the node is a string whose source contains at least one escape.
    public func hasEscapes(_ node: Node) -> Bool {
        tape[node.index].flags & Token.escapedFlag != 0
    }

    /// The range of the string's content between the quotes (still escaped if `hasEscapes`).
    @inlinable func contentRange(_ t: Token) -> Range<Int> {
        Int(t.start) + 1..<Int(t.end) - 1
    }

    /// The unescaped UTF-8 bytes of a string node, or nil if the node is not a string.
    public func stringBytes(_ node: Node) -> [UInt8]? {
        let t = tape[node.index]
        guard t.tag == .string else { return nil }
        if t.flags & Token.escapedFlag == 0 {
            return Array(bytes[contentRange(t)])
        }
        return JSON.unescape(bytes, contentRange(t))
    }

    /// The unescaped value of a string node, or nil if the node is not a string.
    public func string(_ node: Node) -> String? {
        let t = tape[node.index]
        guard t.tag == .string else { return nil }
        if t.flags & Token.escapedFlag == 0 {
            return String(decoding: bytes[contentRange(t)], as: UTF8.self)
        }
        return String(decoding: JSON.unescape(bytes, contentRange(t)), as: UTF8.self)
    }

    /// Whether a string node's unescaped value equals `text`, without allocating for unescaped strings.
    public func string(_ node: Node, equals text: StaticString) -> Bool {
        let t = tape[node.index]
        guard t.tag == .string else { return false }
        if t.flags & Token.escapedFlag != 0 {
            let decoded = JSON.unescape(bytes, contentRange(t))
            return JSON.equal(decoded, 0..<decoded.count, text)
        }
        return JSON.equal(bytes, contentRange(t), text)
    }

    @inlinable
    static func equal(_ bytes: [UInt8], _ range: Range<Int>, _ text: StaticString) -> Bool {
        guard range.count == text.utf8CodeUnitCount else { return false }
        return text.withUTF8Buffer { expected in
            var i = range.lowerBound
            for b in expected {
                if bytes[i] != b { return false }
                i += 1
            }
            return true
        }
    }

    // MARK: Numbers

    /// The number's source text, e.g. `-12.5e3`, or nil if the node is not a number.
    public func numberText(_ node: Node) -> String? {
        let t = tape[node.index]
        guard t.tag == .number else { return nil }
        return String(decoding: bytes[Int(t.start)..<Int(t.end)], as: UTF8.self)
    }

    /// True when the node is a number written without fraction or exponent.
    public func isIntegerLiteral(_ node: Node) -> Bool {
        let t = tape[node.index]
        return t.tag == .number && t.flags & Token.integerFlag != 0
    }

    /// The exact value of an integer literal, or nil when the node is not a number written as an
    /// integer (no fraction, no exponent) or lies outside Int64.
    public func int64(_ node: Node) -> Int64? {
        let t = tape[node.index]
        guard t.tag == .number, t.flags & Token.integerFlag != 0 else { return nil }
        var i = Int(t.start)
        let end = Int(t.end)
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        // Accumulate negatively so that Int64.min is representable.
        var value: Int64 = 0
        while i < end {
            let digit = Int64(bytes[i] &- UInt8(ascii: "0"))
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.subtractingReportingOverflow(digit)
            if o1 || o2 { return nil }
            value = next
            i += 1
        }
        if negative { return value }
        return value == Int64.min ? nil : -value
    }

    /// The value of a number as a finite Double (rounded to nearest), or nil when the node is not
    /// a number or its magnitude overflows Double.
    public func double(_ node: Node) -> Double? {
        let t = tape[node.index]
        guard t.tag == .number else { return nil }
        if t.flags & Token.integerFlag != 0, let exact = int64(node), exact.magnitude < (1 << 53) {
            return Double(exact)
        }
        guard let value = Double(String(decoding: bytes[Int(t.start)..<Int(t.end)], as: UTF8.self)),
              value.isFinite else { return nil }
        return value
    }

    /// True when every number in the node's subtree (the node itself included) is one a Double
    /// holds: finite, a nonzero value that does not round to 0, a zero whose exponent is not below
    /// a Double's (-324) nor one `numeric` refuses to read (2^30 - 1 and more).
    ///
    /// JSON puts no bound on numbers; PostgreSQL's `numeric`, and so `jsonb`, does (`1e1000000`,
    /// `1e-20000`, `0e-99999`: "value overflows numeric format"). A Double's range, which
    /// RFC 8259 section 6 names as what interoperates, lies well within it; but `numeric` also
    /// keeps every digit written after the point, and more than 16383 of them (the exponent
    /// counted: `1.5e-2` has 3) overflow it whatever the value. The default event size (8 KB)
    /// cannot hold so many digits; `--max-event-bytes` (up to 1 MB) can, so they are counted.
    public func numbersFitDouble(within node: Node) -> Bool {
        var i = node.index
        let stop = Int(tape[node.index].next)
        while i < stop {
            let t = tape[i]
            i += 1
            guard t.tag == .number else { continue }
            let text = bytes[Int(t.start)..<Int(t.end)]
            // Up to 15 digits and no exponent: far inside the range, without parsing.
            if t.flags & Token.integerFlag != 0 && text.count <= 15 { continue }
            guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else { return false }
            guard let scale = Self.numericScale(of: text), scale <= Self.numericMaxScale else { return false }
            guard value == 0 else { continue }
            // Rounded to 0: fine only for a zero, and one without a vast negative exponent.
            let mantissa = text.prefix { $0 | 0x20 != UInt8(ascii: "e") }
            if mantissa.contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) { return false }
            if mantissa.count < text.count {
                let exponent = Int(String(decoding: text.dropFirst(mantissa.count + 1), as: UTF8.self))
                guard let exponent, exponent >= -324, exponent < Self.numericExponentLimit else { return false }
            }
        }
        return true
    }

    /// The most digits after the point PostgreSQL's `numeric` keeps (`NUMERIC_DSCALE_MAX`).
    static let numericMaxScale = 16383

    /// The exponent `numeric` refuses to read whatever the digits, a zero's too (`INT_MAX / 2`:
    /// PostgreSQL 15 refuses `0e1073741823`, "value overflows numeric format").
    static let numericExponentLimit = 1_073_741_823

    /// The digits after the point `numeric` keeps of a JSON number: those written after it, less
    /// the exponent (at least 0); nil when the exponent does not fit an Int.
    static func numericScale(of text: ArraySlice<UInt8>) -> Int? {
        let mantissa = text.prefix { $0 | 0x20 != UInt8(ascii: "e") }
        let fraction = mantissa.firstIndex(of: UInt8(ascii: ".")).map { mantissa.endIndex - $0 - 1 } ?? 0
        var exponent = 0
        if mantissa.count < text.count {
            guard let written = Int(String(decoding: text.dropFirst(mantissa.count + 1), as: UTF8.self)) else { return nil }
            exponent = written
        }
        let (scale, overflow) = fraction.subtractingReportingOverflow(exponent)
        return overflow ? nil : max(0, scale)
    }

    // MARK: Containers

    /// Number of elements of an array or members of an object (0 for scalars).
    public func count(_ node: Node) -> Int {
        let t = tape[node.index]
        guard t.tag == .array || t.tag == .object else { return 0 }
        var n = 0
        var i = node.index + 1
        let stop = Int(t.next)
        while i < stop {
            if t.tag == .object { i += 1 }  // key
            i = Int(tape[i].next)
            n += 1
        }
        return n
    }

    /// The elements of an array node (empty for anything else).
    public func elements(_ node: Node) -> Elements {
        let t = tape[node.index]
        guard t.tag == .array else { return Elements(tape: tape, first: 0, stop: 0) }
        return Elements(tape: tape, first: node.index + 1, stop: Int(t.next))
    }

    /// The members of an object node in document order (empty for anything else).
    public func members(_ node: Node) -> Members {
        let t = tape[node.index]
        guard t.tag == .object else { return Members(tape: tape, first: 0, stop: 0) }
        return Members(tape: tape, first: node.index + 1, stop: Int(t.next))
    }

    /// The value of the member named `key`, or nil.
    public func member(_ node: Node, _ key: StaticString) -> Node? {
        for (k, v) in members(node) where string(k, equals: key) { return v }
        return nil
    }

    public struct Elements: Sequence, IteratorProtocol {
        let tape: [Token]
        var i: Int
        let stop: Int
        init(tape: [Token], first: Int, stop: Int) { self.tape = tape; self.i = first; self.stop = stop }

        public mutating func next() -> Node? {
            guard i < stop else { return nil }
            let node = Node(i)
            i = Int(tape[i].next)
            return node
        }
    }

    public struct Members: Sequence, IteratorProtocol {
        let tape: [Token]
        var i: Int
        let stop: Int
        init(tape: [Token], first: Int, stop: Int) { self.tape = tape; self.i = first; self.stop = stop }

        public mutating func next() -> (key: Node, value: Node)? {
            guard i < stop else { return nil }
            let key = Node(i)
            let value = Node(i + 1)
            i = Int(tape[i + 1].next)
            return (key, value)
        }
    }
}

// MARK: - Unescaping

extension JSON {
    /// Decodes the escapes of an already validated string body.
    static func unescape(_ bytes: [UInt8], _ range: Range<Int>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var i = range.lowerBound
        let end = range.upperBound
        while i < end {
            let b = bytes[i]
            guard b == UInt8(ascii: "\\") else {
                out.append(b)
                i += 1
                continue
            }
            let e = bytes[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(hexValue(bytes, i))
                i += 4
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    let low = UInt32(hexValue(bytes, i + 2))
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                appendUTF8(scalar, to: &out)
            default: out.append(e)  // " \ /
            }
        }
        return out
    }

    static func hexValue(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        var v: UInt16 = 0
        for k in at..<at + 4 { v = v << 4 | UInt16(hexDigit(bytes[k])) }
        return v
    }

    /// The first position at or after `position` that is not JSON whitespace, or `end`.
    @inline(__always) static func skippingWhitespace(_ bytes: [UInt8], from position: Int, end: Int) -> Int {
        var position = position
        while position < end {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return position
            }
        }
        return position
    }

    /// 0...15, or 0xFF for a non-hex byte.
    @inlinable static func hexDigit(_ b: UInt8) -> UInt8 {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b &- UInt8(ascii: "A") &+ 10
        default: 0xFF
        }
    }

    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case ..<0x80:
            out.append(UInt8(scalar))
        case ..<0x800:
            out.append(UInt8(0xC0 | scalar >> 6))
            out.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            out.append(UInt8(0xE0 | scalar >> 12))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        default:
            out.append(UInt8(0xF0 | scalar >> 18))
            out.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            out.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
