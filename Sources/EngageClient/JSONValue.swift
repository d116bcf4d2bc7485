/// A JSON value for the free-form `properties` of an event, written by `JSONWriter`.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A whole number; the server counts only these as counts.
    case integer(Int)
    case number(Double)
    case string(String)
    case array([JSONValue])
    /// Written with its keys sorted, so equal objects encode to equal text.
    case object([String: JSONValue])
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Writes compact JSON text with members in the order they are added: the wire form of an event
/// is fixed text, not whatever order a dictionary happens to have.
struct JSONWriter {
    private(set) var text = ""

    /// Writes one object; `body` adds its members through the `ObjectWriter`.
    static func object(_ body: (inout ObjectWriter) -> Void) -> String {
        var writer = ObjectWriter()
        body(&writer)
        return writer.finish()
    }

    struct ObjectWriter {
        private var text = "{"
        private var first = true

        /// `"name":` and the value `write` appends; nothing at all for nil.
        private mutating func member<Value>(_ name: String, _ value: Value?, _ write: (Value, inout String) -> Void) {
            guard let value else { return }
            if !first { text += "," }
            first = false
            JSONWriter.appendString(name, to: &text)
            text += ":"
            write(value, &text)
        }

        mutating func string(_ name: String, _ value: String?) {
            member(name, value) { JSONWriter.appendString($0, to: &$1) }
        }

        mutating func integer(_ name: String, _ value: Int?) {
            member(name, value) { $1 += String($0) }
        }

        mutating func number(_ name: String, _ value: Double?) {
            member(name, value) { JSONWriter.appendNumber($0, to: &$1) }
        }

        mutating func bool(_ name: String, _ value: Bool?) {
            member(name, value) { $1 += $0 ? "true" : "false" }
        }

        mutating func raw(_ name: String, _ json: String?) {
            member(name, json) { $1 += $0 }
        }

        mutating func value(_ name: String, _ value: JSONValue?) {
            member(name, value) { JSONWriter.append($0, to: &$1) }
        }

        fileprivate mutating func finish() -> String {
            text + "}"
        }
    }

    static func encode(_ value: JSONValue) -> String {
        var text = ""
        append(value, to: &text)
        return text
    }

    static func append(_ value: JSONValue, to text: inout String) {
        switch value {
        case .null: text += "null"
        case .bool(let flag): text += flag ? "true" : "false"
        case .integer(let number): text += String(number)
        case .number(let number): appendNumber(number, to: &text)
        case .string(let string): appendString(string, to: &text)
        case .array(let items):
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                append(item, to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, name) in members.keys.sorted().enumerated() {
                if index > 0 { text += "," }
                appendString(name, to: &text)
                text += ":"
                append(members[name]!, to: &text)
            }
            text += "}"
        }
    }

    /// Finite numbers in Swift's shortest round-trip form; JSON has no NaN or infinity, so those
    /// become `null` (which the server treats as absent).
    static func appendNumber(_ number: Double, to text: inout String) {
        guard number.isFinite else {
            text += "null"
            return
        }
        if number == number.rounded(.towardZero), abs(number) < 1e15 {
            text += String(Int64(number))
        } else {
            text += "\(number)"
        }
    }

    static func appendString(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
