import Postgres
import Testing
import TestSupport

/// numeric cells read as integers: exactly, and refused (never a trap) when they are not one.
@Suite("numeric as Int64")
struct NumericDecodingTests {
    let configuration: PostgresConfiguration

    init() throws {
        configuration = try TestPostgres.freshDatabase(migrated: false)
    }

    @Test(arguments: [
        ("0", 0), ("42", 42), ("-42", -42), ("10000", 10_000), ("123456789012", 123_456_789_012),
        // Past Double's 53 bits, where going through Double used to round (or trap at the edges).
        ("9007199254740993", 9_007_199_254_740_993), ("9223372036854775807", .max), ("-9223372036854775808", .min),
        // Fractions are truncated toward zero, as before.
        ("12.7", 12), ("-12.7", -12), ("0.0001", 0), ("1e8", 100_000_000),
    ] as [(String, Int64)])
    func integralValuesAreExact(_ text: String, _ expected: Int64) throws {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        #expect(try connection.query("SELECT \(text)::numeric")[0].decode(0, as: Int64.self) == expected)
    }

    @Test(arguments: ["NaN", "Infinity", "-Infinity", "9223372036854775808", "-9223372036854775809", "1e30"])
    func nonIntegersAreDecodingErrors(_ text: String) throws {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT \(text)::numeric")[0].decode(0, as: Int64.self) }
        #expect(error?.kind == .decoding)
        #expect(error?.description == "postgres decoding error: column numeric: a numeric value is not an integer in Int64's range (NaN, infinite or too large)")
    }

    @Test func sumsOfBigIntegersComeBackExactly() throws {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        let sum = try connection.query("SELECT sum(n) FROM (VALUES (\(Int64.max - 1)::int8), (\(1)::int8), (\(-5)::int8)) AS v(n)")
        #expect(try sum[0].decode(0, as: Int64.self) == Int64.max - 5)
    }
}
