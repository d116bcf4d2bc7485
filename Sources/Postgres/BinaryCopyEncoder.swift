/// Builds the payload of `COPY ... FROM STDIN (FORMAT binary)`: a header, rows of length-prefixed
/// fields in each type's binary wire format, and a trailer. Values are typed, so nothing is parsed
/// from text on the server.
public struct BinaryCopyEncoder: Sendable {
    public private(set) var bytes: [UInt8]
    public private(set) var rowCount = 0

    public init(reservingCapacity capacity: Int = 64 * 1024) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes += Self.header
    }

    private init(empty capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// An encoder of rows only: its bytes can be spliced between `header` and `trailer` together
    /// with other encoders' rows.
    public static func tuplesOnly(reservingCapacity capacity: Int = 64 * 1024) -> BinaryCopyEncoder {
        BinaryCopyEncoder(empty: capacity)
    }

    /// Signature, flags and an empty header extension.
    public static let header: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
    /// The end-of-data marker (a field count of -1).
    public static let trailer: [UInt8] = [0xFF, 0xFF]

    public mutating func beginRow(columnCount: Int) {
        appendInt16(Int16(columnCount))
        rowCount += 1
    }

    public mutating func appendNull() { appendInt32(-1) }

    public mutating func appendInt64(_ value: Int64) {
        appendInt32(8)
        appendBigEndian(UInt64(bitPattern: value), byteCount: 8)
    }

    public mutating func appendInt32Value(_ value: Int32) {
        appendInt32(4)
        appendInt32(value)
    }

    public mutating func appendBool(_ value: Bool) {
        appendInt32(1)
        bytes.append(value ? 1 : 0)
    }

    public mutating func appendDouble(_ value: Double) {
        appendInt32(8)
        appendBigEndian(value.bitPattern, byteCount: 8)
    }

    /// `text`/`varchar`: the UTF-8 bytes.
    public mutating func appendText(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            appendInt32(Int32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func appendTextBytes(_ utf8: [UInt8]) {
        appendInt32(Int32(utf8.count))
        bytes += utf8
    }

    /// `bytea`: the bytes as they are.
    public mutating func appendBytea(_ value: [UInt8]) {
        appendInt32(Int32(value.count))
        bytes += value
    }

    /// `uuid`: exactly 16 bytes.
    public mutating func appendUUID(_ sixteenBytes: [UInt8]) {
        precondition(sixteenBytes.count == 16, "a uuid has 16 bytes")
        appendInt32(16)
        bytes += sixteenBytes
    }

    /// `timestamptz` from microseconds since the Unix epoch.
    public mutating func appendTimestamp(unixMicroseconds: Int64) {
        appendInt64(unixMicroseconds - 946_684_800_000_000)
    }

    /// `jsonb`: a version byte, then JSON text (which the server still parses and validates).
    public mutating func appendJSONB(_ json: [UInt8]) {
        appendInt32(Int32(json.count + 1))
        bytes.append(1)
        bytes += json
    }

    /// Ends the stream; the encoder must not be appended to afterwards.
    public mutating func finish() -> [UInt8] {
        appendInt16(-1)
        return bytes
    }

    private mutating func appendInt16(_ value: Int16) {
        appendBigEndian(UInt64(UInt16(bitPattern: value)), byteCount: 2)
    }

    private mutating func appendInt32(_ value: Int32) {
        appendBigEndian(UInt64(UInt32(bitPattern: value)), byteCount: 4)
    }

    private mutating func appendBigEndian(_ value: UInt64, byteCount: Int) {
        var shift = (byteCount - 1) * 8
        while shift >= 0 {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }
}
