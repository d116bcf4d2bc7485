import Foundation

/// A client-chosen 128-bit event identifier (a UUID; any version is accepted), the idempotency key
/// of ingestion.
public struct EventID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Bytes 0-7 and 8-15, big-endian.
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Exactly 16 bytes, else nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        var h: UInt64 = 0, l: UInt64 = 0
        for k in 0..<8 { h = h << 8 | UInt64(bytes[k]) }
        for k in 8..<16 { l = l << 8 | UInt64(bytes[k]) }
        self.init(high: h, low: l)
    }

    public init(_ uuid: UUID) {
        let u = uuid.uuid
        self.init(bytes: [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7,
                          u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15])!
    }

    /// Parses the canonical 8-4-4-4-12 hexadecimal form, in either case.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard let id = EventID.parse(bytes, bytes.indices) else { return nil }
        self = id
    }

    /// Parses the canonical form from the bytes in `range`.
    public static func parse(_ bytes: [UInt8], _ range: Range<Int>) -> EventID? {
        guard range.count == 36 else { return nil }
        var h: UInt64 = 0, l: UInt64 = 0
        var nibbles = 0
        for i in range {
            let b = bytes[i]
            let at = i - range.lowerBound
            if at == 8 || at == 13 || at == 18 || at == 23 {
                guard b == UInt8(ascii: "-") else { return nil }
                continue
            }
            let d = JSON.hexDigit(b)
            guard d != 0xFF else { return nil }
            if nibbles < 16 { h = h << 4 | UInt64(d) } else { l = l << 4 | UInt64(d) }
            nibbles += 1
        }
        return EventID(high: h, low: l)
    }

    /// The 16 bytes, big-endian (RFC 9562 order).
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        for k in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: high >> UInt64(k))) }
        for k in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: low >> UInt64(k))) }
        return out
    }

    public var uuid: UUID {
        let b = bytes
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                           b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// Lowercase canonical form, `0f8fad5b-d9cb-469f-a165-70867728950e`.
    /// Appends the canonical lowercase form to `out`, without intermediate allocations.
    public func appendCanonical(to out: inout [UInt8]) {
        for (word, range) in [(high, 0..<8), (low, 8..<16)] {
            for n in range {
                if n == 4 || n == 6 || n == 8 || n == 10 { out.append(UInt8(ascii: "-")) }
                let byte = UInt8(truncatingIfNeeded: word >> UInt64((7 - (n & 7)) * 8))
                out.append(EventID.hexDigits[Int(byte >> 4)])
                out.append(EventID.hexDigits[Int(byte & 0x0F)])
            }
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    public var description: String {
        var out: [UInt8] = []
        out.reserveCapacity(36)
        appendCanonical(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public static func < (a: EventID, b: EventID) -> Bool {
        (a.high, a.low) < (b.high, b.low)
    }
}

extension JSONWriter {
    /// An event id as a JSON string in its canonical form.
    public mutating func eventID(_ id: EventID) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        id.appendCanonical(to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }
}
