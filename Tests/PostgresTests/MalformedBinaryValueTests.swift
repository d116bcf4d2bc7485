@testable import Postgres
import Testing

/// Binary values PostgreSQL never sends (a broken proxy, a corrupted stream) are refused with an
/// error, never a trap: a negative or impossible count, a digit out of range.
@Suite struct MalformedBinaryValueTests {
    static func bigEndian(_ values: [Int32]) -> [UInt8] {
        values.flatMap { value in (0..<4).reversed().map { UInt8(truncatingIfNeeded: UInt32(bitPattern: value) >> ($0 * 8)) } }
    }

    static func bigEndian16(_ values: [Int16]) -> [UInt8] {
        values.flatMap { [UInt8(truncatingIfNeeded: UInt16(bitPattern: $0) >> 8), UInt8(truncatingIfNeeded: UInt16(bitPattern: $0))] }
    }

    /// One dimension of int8 elements: dimensions, has-nulls, element type, count, lower bound.
    static func int8Array(count: Int32, elements: [Int64] = []) -> [UInt8] {
        bigEndian([1, 0, Int32(PostgresType.int8), count, 1])
            + elements.flatMap { bigEndian([8]) + bigEndian([Int32(truncatingIfNeeded: $0 >> 32), Int32(truncatingIfNeeded: $0)]) }
    }

    @Test func aWellFormedArrayReads() throws {
        let bytes = Self.int8Array(count: 2, elements: [7, -3])
        let elements = try bytes.withUnsafeBytes { try ArrayDecoding.elements(of: $0) }
        #expect(elements == [.integer(7), .integer(-3)])
    }

    @Test(arguments: [Int32(-1), .min, 3, .max])
    func anImpossibleElementCountIsRefused(_ count: Int32) {
        let bytes = Self.int8Array(count: count, elements: [7, -3])
        let error = #expect(throws: PostgresError.self) { try bytes.withUnsafeBytes { try ArrayDecoding.elements(of: $0) } }
        #expect(error?.kind == .protocolViolation)
    }

    /// digit count, weight, sign, display scale, then digits.
    @Test(arguments: [
        [Int16(-1), 0, 0, 0],
        [.min, 0, 0, 0],
        [1, 0, 0, 0, -5],
        [1, 0, 0, 0, 10_000],
        [2, 1, 0x4000, 0, 1, .min],
    ])
    func aMalformedNumericIsRefused(_ words: [Int16]) {
        let bytes = Self.bigEndian16(words)
        let asDouble = #expect(throws: PostgresError.self) { try bytes.withUnsafeBytes { try NumericDecoding.double(from: $0) } }
        #expect(asDouble?.kind == .protocolViolation)
        let asInteger = #expect(throws: PostgresError.self) { try bytes.withUnsafeBytes { try NumericDecoding.int64(from: $0) } }
        #expect(asInteger?.kind == .protocolViolation)
    }

    @Test func aWellFormedNumericReads() throws {
        // 12345678 = 1234 * 10000 + 5678: two digits, weight 1.
        let bytes = Self.bigEndian16([2, 1, 0, 0, 1234, 5678])
        #expect(try bytes.withUnsafeBytes { try NumericDecoding.int64(from: $0) } == 12_345_678)
        #expect(try bytes.withUnsafeBytes { try NumericDecoding.double(from: $0) } == 12_345_678)
    }
}
