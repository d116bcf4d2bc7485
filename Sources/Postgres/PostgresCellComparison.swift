import Foundation

/// Reads that look at a value in place, without copying it out of the result: for loops over
/// millions of rows, where a `String` or an array per cell would cost more than the work.
extension PostgresCell {
    /// True when both values have the same bytes (NULL equals only NULL), e.g. the same text.
    public func hasSameBytes(as other: PostgresCell) -> Bool {
        if isNull || other.isNull { return isNull && other.isNull }
        return result.withCellBytes(row: row, column: column) { mine in
            other.result.withCellBytes(row: other.row, column: other.column) { theirs in
                mine.count == theirs.count && (mine.count == 0 || memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0)
            }
        }
    }

    /// The position of the first candidate whose bytes equal this value's (the UTF-8 of a text
    /// value); nil when none does or the value is NULL.
    public func position(in candidates: [[UInt8]]) -> Int? {
        if isNull { return nil }
        return result.withCellBytes(row: row, column: column) { mine in
            candidates.firstIndex { candidate in
                candidate.count == mine.count && candidate.withUnsafeBytes { theirs in
                    mine.count == 0 || memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0
                }
            }
        }
    }

    /// A hash of the value's bytes (NULL hashes as no bytes), to find repeated values among
    /// millions without making a `String` of each. Equal bytes hash equally within one process;
    /// different bytes may collide.
    public var bytesHash: Int {
        result.withCellBytes(row: row, column: column) { bytes in
            var hasher = Hasher()
            hasher.combine(bytes: bytes)
            return hasher.finalize()
        }
    }

    /// A `uuid` as its bytes 0-7 and 8-15, big-endian.
    public func uuidHalves() throws -> (high: UInt64, low: UInt64) {
        guard typeOID == PostgresType.uuid else { throw mismatch("a uuid") }
        return try result.withCellBytes(row: row, column: column) { raw in
            guard raw.count == 16 else { throw PostgresError(kind: .protocolViolation, message: "uuid of \(raw.count) bytes") }
            var high: UInt64 = 0, low: UInt64 = 0
            for k in 0..<8 { high = high << 8 | UInt64(raw[k]) }
            for k in 8..<16 { low = low << 8 | UInt64(raw[k]) }
            return (high, low)
        }
    }

    /// A text value holding a decimal integer of at most 18 digits without sign or spaces, such as
    /// `jsonb ->> 'n'` gives for a JSON integer; nil for anything else or past `limit`.
    public func decimalInteger(upTo limit: Int64) -> Int64? {
        if isNull { return nil }
        return result.withCellBytes(row: row, column: column) { raw -> Int64? in
            guard !raw.isEmpty, raw.count <= 18 else { return nil }
            var value: Int64 = 0
            for byte in raw {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value <= limit ? value : nil
        }
    }
}
