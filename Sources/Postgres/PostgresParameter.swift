import Foundation

/// One bound value as it travels to the server: text format unless binary is required (bytea).
public struct PostgresParameter: Sendable, Equatable {
    public enum Format: Int32, Sendable { case text = 0, binary = 1 }

    public var bytes: [UInt8]?
    public var format: Format
    /// 0 lets the server infer the type from the statement.
    public var typeOID: UInt32

    public init(bytes: [UInt8]?, format: Format = .text, typeOID: UInt32 = 0) {
        self.bytes = bytes
        self.format = format
        self.typeOID = typeOID
    }

    public static let null = PostgresParameter(bytes: nil)

    public static func text(_ value: String, typeOID: UInt32 = 0) -> PostgresParameter {
        PostgresParameter(bytes: Array(value.utf8), typeOID: typeOID)
    }
}

/// A Swift value that can be bound as a statement parameter.
public protocol PostgresEncodable: Sendable {
    var postgresParameter: PostgresParameter { get }
}

extension String: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .text(self) }
}

extension Substring: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .text(String(self)) }
}

extension Int: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .text(String(self)) }
}

extension Int64: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .text(String(self)) }
}

extension Int32: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .text(String(self)) }
}

extension UInt64: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .text(String(self)) }
}

extension Double: PostgresEncodable {
    public var postgresParameter: PostgresParameter {
        // Round-trippable shortest representation; PostgreSQL accepts NaN and Infinity spelled this way.
        if isNaN { return .text("NaN") }
        if isInfinite { return .text(self > 0 ? "Infinity" : "-Infinity") }
        return .text("\(self)")
    }
}

extension Bool: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .text(self ? "true" : "false") }
}

extension UUID: PostgresEncodable {
    public var postgresParameter: PostgresParameter { .text(uuidString.lowercased(), typeOID: PostgresType.uuid) }
}

extension Date: PostgresEncodable {
    public var postgresParameter: PostgresParameter {
        PostgresTimestamp(unixMicroseconds: Int64((timeIntervalSince1970 * 1_000_000).rounded())).postgresParameter
    }
}

/// Raw bytes bound as `bytea`.
public struct PostgresBytes: PostgresEncodable, Equatable {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var postgresParameter: PostgresParameter {
        PostgresParameter(bytes: bytes, format: .binary, typeOID: PostgresType.bytea)
    }
}

/// A JSON document bound as `jsonb`; the text must already be valid JSON.
public struct PostgresJSONB: PostgresEncodable, Equatable {
    public var json: [UInt8]
    public init(_ json: [UInt8]) { self.json = json }
    public init(_ json: String) { self.json = Array(json.utf8) }
    public var postgresParameter: PostgresParameter {
        PostgresParameter(bytes: json, typeOID: PostgresType.jsonb)
    }
}

/// A timestamp with microsecond precision, as PostgreSQL stores it.
public struct PostgresTimestamp: Sendable, Hashable, Comparable, PostgresEncodable {
    public var unixMicroseconds: Int64
    public init(unixMicroseconds: Int64) { self.unixMicroseconds = unixMicroseconds }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.unixMicroseconds < rhs.unixMicroseconds }

    /// Binary `timestamptz`: big-endian microseconds since 2000-01-01 00:00 UTC.
    public var postgresParameter: PostgresParameter {
        let sincePostgresEpoch = UInt64(bitPattern: unixMicroseconds &- Self.postgresEpochUnixMicroseconds)
        let bytes = stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: sincePostgresEpoch >> UInt64($0)) }
        return PostgresParameter(bytes: bytes, format: .binary, typeOID: PostgresType.timestamptz)
    }

    /// 2000-01-01 00:00 UTC, where PostgreSQL counts timestamps from.
    static let postgresEpochUnixMicroseconds: Int64 = 946_684_800_000_000
}

/// Elements that can travel inside a one-dimensional array parameter (`text[]`, `int8[]`, `uuid[]`).
public protocol PostgresArrayElement: PostgresEncodable {
    static var arrayTypeOID: UInt32 { get }
    var arrayLiteralElement: String { get }
}

extension String: PostgresArrayElement {
    public static var arrayTypeOID: UInt32 { PostgresType.textArray }
    public var arrayLiteralElement: String {
        // Byte-wise: quoting only touches ASCII '"' and '\\', which never occur inside a UTF-8 sequence.
        var quoted: [UInt8] = [UInt8(ascii: "\"")]
        quoted.reserveCapacity(utf8.count + 8)
        for byte in utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { quoted.append(UInt8(ascii: "\\")) }
            quoted.append(byte)
        }
        quoted.append(UInt8(ascii: "\""))
        return String(decoding: quoted, as: UTF8.self)
    }
}

extension Int64: PostgresArrayElement {
    public static var arrayTypeOID: UInt32 { PostgresType.int8Array }
    public var arrayLiteralElement: String { String(self) }
}

extension Int: PostgresArrayElement {
    public static var arrayTypeOID: UInt32 { PostgresType.int8Array }
    public var arrayLiteralElement: String { String(self) }
}

extension Double: PostgresArrayElement {
    public static var arrayTypeOID: UInt32 { PostgresType.float8Array }
    public var arrayLiteralElement: String { postgresParameter.bytes.map { String(decoding: $0, as: UTF8.self) } ?? "NULL" }
}

extension UUID: PostgresArrayElement {
    public static var arrayTypeOID: UInt32 { PostgresType.uuidArray }
    public var arrayLiteralElement: String { uuidString.lowercased() }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public var postgresParameter: PostgresParameter {
        var literal = "{"
        for (index, element) in enumerated() {
            if index > 0 { literal += "," }
            literal += element.arrayLiteralElement
        }
        literal += "}"
        return .text(literal, typeOID: Element.arrayTypeOID)
    }
}

/// Type OIDs from `pg_type` that this module encodes or decodes.
public enum PostgresType {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let name: UInt32 = 19
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let oid: UInt32 = 26
    public static let json: UInt32 = 114
    public static let float4: UInt32 = 700
    public static let float8: UInt32 = 701
    public static let unknown: UInt32 = 705
    public static let int4Array: UInt32 = 1007
    public static let textArray: UInt32 = 1009
    public static let int8Array: UInt32 = 1016
    public static let float8Array: UInt32 = 1022
    public static let bpchar: UInt32 = 1042
    public static let varchar: UInt32 = 1043
    public static let date: UInt32 = 1082
    public static let timestamp: UInt32 = 1114
    public static let timestamptz: UInt32 = 1184
    public static let numeric: UInt32 = 1700
    public static let uuid: UInt32 = 2950
    public static let uuidArray: UInt32 = 2951
    public static let jsonb: UInt32 = 3802
    public static let xid8: UInt32 = 5069
}
