import JSONText

/// Builds compact JSON text. Commas between members and elements are inserted automatically;
/// nesting is limited to 64 levels (the writer tracks "first element" per level in a bitmask).
///
/// Strings are written canonically by `JSONString`: `"` and `\` are escaped, control characters
/// become `\b \f \n \r \t` or `\u00XX`, everything else (including non-ASCII) is copied as UTF-8.
public struct JSONWriter: Sendable {
    /// Set by the value methods here and by typed ones written beside their types (`eventID`).
    public internal(set) var bytes: [UInt8]
    private var level = 0
    /// Set between a key and its value, which takes no comma.
    private var keyWritten = false
    /// Bit n is set when the container at level n already has an element.
    private var hasElement: UInt64 = 0

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    // MARK: Structure

    public mutating func beginObject() { beginContainer(UInt8(ascii: "{")) }
    public mutating func endObject() { endContainer(UInt8(ascii: "}")) }
    public mutating func beginArray() { beginContainer(UInt8(ascii: "[")) }
    public mutating func endArray() { endContainer(UInt8(ascii: "]")) }

    /// Writes a member name and colon; the value follows with one of the value methods.
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        keyWritten = true
    }

    /// Writes a member name given at run time (escaped canonically).
    public mutating func key(_ name: String) {
        separate()
        JSONString.append(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        keyWritten = true
    }

    // MARK: Values

    public mutating func string(_ value: String) {
        separate()
        JSONString.append(value, to: &bytes)
    }

    public mutating func int(_ value: Int) {
        separate()
        JSONWriter.appendInteger(Int64(value), to: &bytes)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? [0x74, 0x72, 0x75, 0x65] : [0x66, 0x61, 0x6C, 0x73, 0x65])
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
    }

    /// Writes a finite Double in Swift's shortest round-tripping form (`0.5`, `1.0`, `1e-05`),
    /// which is valid JSON. Non-finite values are written as `null`.
    public mutating func double(_ value: Double) {
        guard value.isFinite else { return null() }
        separate()
        bytes.append(contentsOf: value.description.utf8)
    }

    /// The value, or `null` for nil.
    public mutating func optionalDouble(_ value: Double?) {
        if let value { double(value) } else { null() }
    }

    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    public mutating func optionalBool(_ value: Bool?) {
        if let value { bool(value) } else { null() }
    }

    /// Copies already valid JSON text (e.g. a stored object) verbatim.
    public mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
    }

    // MARK: Canonical numbers

    /// Appends the decimal digits of `value` without going through `String`.
    public static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var divisor: UInt64 = 1
        while magnitude / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            let digit = magnitude / divisor
            out.append(UInt8(ascii: "0") + UInt8(digit))
            magnitude -= digit * divisor
            divisor /= 10
        }
    }

    // MARK: Separators

    /// Writes a comma when the current container already has an element (not after a key);
    /// every value starts with it.
    mutating func separate() {
        if keyWritten {
            keyWritten = false
            return
        }
        guard level > 0 else { return }
        let bit: UInt64 = 1 << UInt64(level - 1)
        if hasElement & bit != 0 {
            bytes.append(UInt8(ascii: ","))
        } else {
            hasElement |= bit
        }
    }

    private mutating func beginContainer(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        level += 1
        precondition(level <= 64, "JSONWriter nests at most 64 levels")
        hasElement &= ~(1 << UInt64(level - 1))
    }

    private mutating func endContainer(_ bracket: UInt8) {
        bytes.append(bracket)
        level -= 1
    }
}
