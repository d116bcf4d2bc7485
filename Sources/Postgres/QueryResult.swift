import CLibPQ
import Foundation

/// The rows of one statement, decoded lazily from libpq's result. Results are requested in binary.
///
/// `@unchecked Sendable`: a `PGresult` is immutable once returned by libpq and reading it from
/// several threads is safe; the handle is freed once, in `deinit`.
public final class QueryResult: @unchecked Sendable {
    private let handle: OpaquePointer
    public let rowCount: Int
    public let columnNames: [String]
    public let columnTypes: [UInt32]
    /// Rows inserted, updated, deleted or copied, from the command tag (0 when it has none).
    public let affectedRows: Int

    init(taking handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        let columns = Int(PQnfields(handle))
        columnNames = (0..<columns).map { String(cString: PQfname(handle, Int32($0))) }
        columnTypes = (0..<columns).map { UInt32(PQftype(handle, Int32($0))) }
        affectedRows = Int(String(cString: PQcmdTuples(handle))) ?? 0
    }

    deinit { PQclear(handle) }

    public var columnCount: Int { columnNames.count }
    public var isEmpty: Bool { rowCount == 0 }

    public subscript(row: Int) -> PostgresRow { PostgresRow(result: self, index: row) }

    public var rows: [PostgresRow] { (0..<rowCount).map { PostgresRow(result: self, index: $0) } }

    public func columnIndex(named name: String) throws -> Int {
        guard let index = columnNames.firstIndex(of: name) else {
            throw PostgresError(kind: .decoding, message: "no column named \(name)")
        }
        return index
    }

    func isNull(row: Int, column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) == 1
    }

    /// Runs `body` over the cell's bytes; they are valid only inside the call.
    func withCellBytes<T>(row: Int, column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard let pointer = PQgetvalue(handle, Int32(row), Int32(column)) else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: pointer, count: length))
    }
}

/// One row of a `QueryResult`.
public struct PostgresRow: Sendable {
    let result: QueryResult
    public let index: Int

    public func isNull(_ column: Int) -> Bool { result.isNull(row: index, column: column) }

    public func cell(_ column: Int) -> PostgresCell {
        PostgresCell(result: result, row: index, column: column)
    }

    public func decode<Value: PostgresDecodable>(_ column: Int, as type: Value.Type = Value.self) throws -> Value {
        guard column >= 0, column < result.columnCount else {
            throw PostgresError(kind: .decoding, message: "column \(column) is out of range")
        }
        let cell = cell(column)
        if cell.isNull { return try Value.decodeNull(column: result.columnNames[column]) }
        do {
            return try Value(postgresCell: cell)
        } catch var error as PostgresError {
            error.message = "column \(result.columnNames[column]): \(error.message)"
            throw error
        }
    }

    public func decode<Value: PostgresDecodable>(_ name: String, as type: Value.Type = Value.self) throws -> Value {
        try decode(result.columnIndex(named: name), as: type)
    }
}

/// A single value in a row, read in PostgreSQL's binary format.
public struct PostgresCell: Sendable {
    let result: QueryResult
    let row: Int
    let column: Int

    public var typeOID: UInt32 { result.columnTypes[column] }
    public var isNull: Bool { result.isNull(row: row, column: column) }

    public var bytes: [UInt8] { result.withCellBytes(row: row, column: column) { Array($0.bindMemory(to: UInt8.self)) } }

    func mismatch(_ wanted: String) -> PostgresError {
        PostgresError(kind: .decoding, message: "cannot decode type oid \(typeOID) as \(wanted)")
    }

    func readInteger(byteCount: Int) throws -> Int64 {
        try result.withCellBytes(row: row, column: column) { raw in
            guard raw.count == byteCount else {
                throw PostgresError(kind: .protocolViolation, message: "expected \(byteCount) bytes, got \(raw.count)")
            }
            var value: Int64 = 0
            for byte in raw { value = (value << 8) | Int64(byte) }
            // Sign-extend from the value's width.
            let shift = Int64(64 - byteCount * 8)
            return shift == 0 ? value : (value << shift) >> shift
        }
    }

    public func int64() throws -> Int64 {
        switch typeOID {
        case PostgresType.int8: return try readInteger(byteCount: 8)
        case PostgresType.int4: return try readInteger(byteCount: 4)
        case PostgresType.int2: return try readInteger(byteCount: 2)
        case PostgresType.oid: return try readInteger(byteCount: 4) & 0xFFFF_FFFF
        case PostgresType.numeric: return try result.withCellBytes(row: row, column: column) { try NumericDecoding.int64(from: $0) }
        default: throw mismatch("an integer")
        }
    }

    public func uint64() throws -> UInt64 {
        guard typeOID == PostgresType.xid8 || typeOID == PostgresType.int8 else { throw mismatch("an unsigned 64-bit integer") }
        return UInt64(bitPattern: try readInteger(byteCount: 8))
    }

    public func double() throws -> Double {
        switch typeOID {
        case PostgresType.float8: return Double(bitPattern: UInt64(bitPattern: try readInteger(byteCount: 8)))
        case PostgresType.float4:
            return Double(Float(bitPattern: UInt32(truncatingIfNeeded: try readInteger(byteCount: 4))))
        case PostgresType.int8, PostgresType.int4, PostgresType.int2: return Double(try int64())
        case PostgresType.numeric: return try result.withCellBytes(row: row, column: column) { try NumericDecoding.double(from: $0) }
        default: throw mismatch("a floating-point number")
        }
    }

    public func bool() throws -> Bool {
        guard typeOID == PostgresType.bool else { throw mismatch("a boolean") }
        return try readInteger(byteCount: 1) != 0
    }

    /// Text, varchar, name, json and jsonb as a string.
    public func string() throws -> String {
        try result.withCellBytes(row: row, column: column) { raw in
            switch typeOID {
            case PostgresType.text, PostgresType.varchar, PostgresType.bpchar, PostgresType.name,
                 PostgresType.unknown, PostgresType.json:
                return String(decoding: raw, as: UTF8.self)
            case PostgresType.jsonb:
                guard raw.first == 1 else { throw PostgresError(kind: .protocolViolation, message: "unknown jsonb version") }
                return String(decoding: UnsafeRawBufferPointer(rebasing: raw.dropFirst()), as: UTF8.self)
            case PostgresType.uuid:
                return try PostgresCell.uuidString(raw)
            case PostgresType.int8, PostgresType.int4, PostgresType.int2:
                return String(try int64())
            default: throw mismatch("a string")
            }
        }
    }

    /// The UTF-8 bytes of text or JSON values (jsonb without its version byte).
    public func utf8Bytes() throws -> [UInt8] {
        try result.withCellBytes(row: row, column: column) { raw in
            switch typeOID {
            case PostgresType.jsonb:
                guard raw.first == 1 else { throw PostgresError(kind: .protocolViolation, message: "unknown jsonb version") }
                return Array(raw.dropFirst())
            case PostgresType.text, PostgresType.varchar, PostgresType.bpchar, PostgresType.name, PostgresType.json,
                 PostgresType.bytea:
                return Array(raw)
            default: throw mismatch("UTF-8 bytes")
            }
        }
    }

    /// The 16 bytes of a `uuid`.
    public func uuidBytes() throws -> [UInt8] {
        guard typeOID == PostgresType.uuid else { throw mismatch("a uuid") }
        let bytes = self.bytes
        guard bytes.count == 16 else { throw PostgresError(kind: .protocolViolation, message: "uuid of \(bytes.count) bytes") }
        return bytes
    }

    /// Microseconds since the Unix epoch for `timestamptz`, `timestamp` and `date`.
    /// Infinity (Int64 or Int32 at their ends in PostgreSQL's binary format) and times PostgreSQL
    /// holds beyond Int64 microseconds since 1970 (the last years of its timestamps, most of its
    /// dates) are decoding errors: stored data must not trap its reader.
    public func unixMicroseconds() throws -> Int64 {
        let postgresEpochOffset = PostgresTimestamp.postgresEpochUnixMicroseconds
        let microseconds: (partialValue: Int64, overflow: Bool)
        switch typeOID {
        case PostgresType.timestamptz, PostgresType.timestamp:
            let value = try readInteger(byteCount: 8)
            guard value != .max && value != .min else { throw outOfRange() }
            microseconds = value.addingReportingOverflow(postgresEpochOffset)
        case PostgresType.date:
            let days = try readInteger(byteCount: 4)
            guard days != Int64(Int32.max) && days != Int64(Int32.min) else { throw outOfRange() }
            let (sinceEpoch, overflow) = days.multipliedReportingOverflow(by: 86_400_000_000)
            guard !overflow else { throw outOfRange() }
            microseconds = sinceEpoch.addingReportingOverflow(postgresEpochOffset)
        default: throw mismatch("a timestamp")
        }
        guard !microseconds.overflow else { throw outOfRange() }
        return microseconds.partialValue
    }

    private func outOfRange() -> PostgresError {
        PostgresError(kind: .decoding, message: "a time of type oid \(typeOID) is infinite or beyond Int64 microseconds since 1970")
    }

    /// Elements of a one-dimensional array of int2/int4/int8/float8/text; NULL elements are rejected.
    public func arrayElements() throws -> [ArrayElement] {
        try result.withCellBytes(row: row, column: column) { raw in try ArrayDecoding.elements(of: raw) }
    }

    static func uuidString(_ raw: UnsafeRawBufferPointer) throws -> String {
        guard raw.count == 16 else { throw PostgresError(kind: .protocolViolation, message: "uuid of \(raw.count) bytes") }
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in raw.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// An element of a decoded array.
    public enum ArrayElement: Sendable, Equatable {
        case integer(Int64)
        case double(Double)
        case text(String)
    }
}

enum ArrayDecoding {
    static func elements(of raw: UnsafeRawBufferPointer) throws -> [PostgresCell.ArrayElement] {
        var reader = BigEndianReader(raw)
        let dimensions = try reader.int32()
        _ = try reader.int32() // has-nulls flag; each element is checked below
        let elementType = UInt32(bitPattern: try reader.int32())
        if dimensions == 0 { return [] }
        guard dimensions == 1 else {
            throw PostgresError(kind: .decoding, message: "only one-dimensional arrays are supported")
        }
        let count = Int(try reader.int32())
        _ = try reader.int32() // lower bound
        // Each element takes at least its 4-byte length: a count past that is a malformed value,
        // refused before it reserves memory or makes an invalid range.
        guard count >= 0, count <= (raw.count - reader.offset) / 4 else {
            throw PostgresError(kind: .protocolViolation, message: "binary array holds an impossible element count")
        }
        var elements: [PostgresCell.ArrayElement] = []
        elements.reserveCapacity(count)
        for _ in 0..<count {
            let length = Int(try reader.int32())
            guard length >= 0 else { throw PostgresError(kind: .decoding, message: "array holds NULL") }
            let body = try reader.bytes(length)
            switch elementType {
            case PostgresType.int8, PostgresType.int4, PostgresType.int2:
                var value: Int64 = 0
                for byte in body { value = (value << 8) | Int64(byte) }
                let shift = Int64(64 - length * 8)
                elements.append(.integer(shift == 0 ? value : (value << shift) >> shift))
            case PostgresType.float8:
                var bits: UInt64 = 0
                for byte in body { bits = (bits << 8) | UInt64(byte) }
                elements.append(.double(Double(bitPattern: bits)))
            case PostgresType.text, PostgresType.varchar, PostgresType.name:
                elements.append(.text(String(decoding: body, as: UTF8.self)))
            default:
                throw PostgresError(kind: .decoding, message: "arrays of type oid \(elementType) are not supported")
            }
        }
        return elements
    }
}

struct BigEndianReader {
    let raw: UnsafeRawBufferPointer
    var offset = 0
    init(_ raw: UnsafeRawBufferPointer) { self.raw = raw }

    mutating func bytes(_ count: Int) throws -> UnsafeRawBufferPointer.SubSequence {
        guard count >= 0, offset + count <= raw.count else {
            throw PostgresError(kind: .protocolViolation, message: "binary value ends early")
        }
        defer { offset += count }
        return raw[offset..<(offset + count)]
    }

    mutating func int16() throws -> Int16 {
        let body = try bytes(2)
        return Int16(bitPattern: UInt16(body[body.startIndex]) << 8 | UInt16(body[body.startIndex + 1]))
    }

    mutating func int32() throws -> Int32 {
        var value: UInt32 = 0
        for byte in try bytes(4) { value = value << 8 | UInt32(byte) }
        return Int32(bitPattern: value)
    }
}

/// PostgreSQL's binary numeric: digit count, weight, sign, display scale, then base-10000 digits.
enum NumericDecoding {
    static func double(from raw: UnsafeRawBufferPointer) throws -> Double {
        var reader = BigEndianReader(raw)
        let (digitCount, weight, sign) = try header(&reader)
        if sign == nan { return .nan }
        if sign == positiveInfinity { return .infinity }
        if sign == negativeInfinity { return -.infinity }
        var value = 0.0
        for index in 0..<digitCount {
            let digit = Double(try digitValue(&reader))
            value += digit * pow(10_000, Double(weight - index))
        }
        return sign == negative ? -value : value
    }

    /// The value exactly, any fraction truncated toward zero (as `Int64(Double)` did); NaN, the
    /// infinities and values beyond Int64 are decoding errors, not traps.
    static func int64(from raw: UnsafeRawBufferPointer) throws -> Int64 {
        var reader = BigEndianReader(raw)
        let (digitCount, weight, sign) = try header(&reader)
        let notAnInt64 = PostgresError(kind: .decoding, message: "a numeric value is not an integer in Int64's range (NaN, infinite or too large)")
        guard sign == positive || sign == negative else { throw notAnInt64 }
        var magnitude: UInt64 = 0
        // Digits 0...weight make the integer part (those past digitCount are zeros).
        for index in 0..<max(0, weight + 1) {
            let digit = index < digitCount ? UInt64(try digitValue(&reader)) : 0
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: 10_000)
            let (sum, carry) = shifted.addingReportingOverflow(digit)
            guard !overflow, !carry else { throw notAnInt64 }
            magnitude = sum
        }
        if sign == negative {
            guard magnitude <= Int64.min.magnitude else { throw notAnInt64 }
            return magnitude == Int64.min.magnitude ? .min : -Int64(magnitude)
        }
        guard let value = Int64(exactly: magnitude) else { throw notAnInt64 }
        return value
    }

    private static let positive: UInt16 = 0x0000
    private static let negative: UInt16 = 0x4000
    private static let nan: UInt16 = 0xC000
    private static let positiveInfinity: UInt16 = 0xD000
    private static let negativeInfinity: UInt16 = 0xF000

    /// A base-10000 digit; anything else is a malformed value, refused rather than trapped on.
    private static func digitValue(_ reader: inout BigEndianReader) throws -> Int16 {
        let digit = try reader.int16()
        guard (0..<10_000).contains(digit) else {
            throw PostgresError(kind: .protocolViolation, message: "binary numeric holds a digit out of range")
        }
        return digit
    }

    private static func header(_ reader: inout BigEndianReader) throws -> (digitCount: Int, weight: Int, sign: UInt16) {
        let digitCount = Int(try reader.int16())
        guard digitCount >= 0 else {
            throw PostgresError(kind: .protocolViolation, message: "binary numeric holds a negative digit count")
        }
        let weight = Int(try reader.int16())
        let sign = UInt16(bitPattern: try reader.int16())
        _ = try reader.int16()
        return (digitCount, weight, sign)
    }
}

/// A Swift type that can be read from a result cell.
public protocol PostgresDecodable {
    init(postgresCell cell: PostgresCell) throws
    /// What a SQL NULL becomes; throws unless the type is optional.
    static func decodeNull(column: String) throws -> Self
}

extension PostgresDecodable {
    public static func decodeNull(column: String) throws -> Self {
        throw PostgresError(kind: .decoding, message: "column \(column) is NULL")
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = .some(try Wrapped(postgresCell: cell)) }
    public static func decodeNull(column: String) throws -> Self { nil }
}

extension Int64: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = try cell.int64() }
}

extension Int: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = Int(try cell.int64()) }
}

extension Int32: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        let value = try cell.int64()
        guard let narrowed = Int32(exactly: value) else {
            throw PostgresError(kind: .decoding, message: "an integer does not fit in Int32")
        }
        self = narrowed
    }
}

extension UInt64: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = try cell.uint64() }
}

extension Double: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = try cell.double() }
}

extension Bool: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = try cell.bool() }
}

extension String: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self = try cell.string() }
}

extension UUID: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        let b = try cell.uuidBytes()
        self = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}

extension PostgresTimestamp: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self.init(unixMicroseconds: try cell.unixMicroseconds()) }
}

extension Date: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = Date(timeIntervalSince1970: Double(try cell.unixMicroseconds()) / 1_000_000)
    }
}

extension PostgresBytes: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self.init(cell.bytes) }
}

extension PostgresJSONB: PostgresDecodable {
    public init(postgresCell cell: PostgresCell) throws { self.init(try cell.utf8Bytes()) }
}

extension Array: PostgresDecodable where Element: PostgresArrayDecodable {
    public init(postgresCell cell: PostgresCell) throws {
        self = try cell.arrayElements().map { try Element(arrayElement: $0) }
    }
}

/// Elements readable from a one-dimensional array.
public protocol PostgresArrayDecodable {
    init(arrayElement: PostgresCell.ArrayElement) throws
}

extension Int64: PostgresArrayDecodable {
    public init(arrayElement: PostgresCell.ArrayElement) throws {
        guard case .integer(let value) = arrayElement else { throw PostgresError(kind: .decoding, message: "array element is not an integer") }
        self = value
    }
}

extension Int: PostgresArrayDecodable {
    public init(arrayElement: PostgresCell.ArrayElement) throws { self = Int(try Int64(arrayElement: arrayElement)) }
}

extension Double: PostgresArrayDecodable {
    public init(arrayElement: PostgresCell.ArrayElement) throws {
        switch arrayElement {
        case .double(let value): self = value
        case .integer(let value): self = Double(value)
        case .text: throw PostgresError(kind: .decoding, message: "array element is not a number")
        }
    }
}

extension String: PostgresArrayDecodable {
    public init(arrayElement: PostgresCell.ArrayElement) throws {
        guard case .text(let value) = arrayElement else { throw PostgresError(kind: .decoding, message: "array element is not text") }
        self = value
    }
}
