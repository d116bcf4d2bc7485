import Postgres
import Testing
import TestSupport

/// timestamptz, timestamp and date cells read as microseconds since 1970: exactly, and refused
/// (never a trap) where PostgreSQL holds what Int64 microseconds since 1970 cannot: infinity and
/// the last millennia of its range.
@Suite("timestamps as Unix microseconds")
struct TimestampDecodingTests {
    let configuration: PostgresConfiguration

    init() throws {
        configuration = try TestPostgres.freshDatabase(migrated: false)
    }

    @Test(arguments: [
        ("'1970-01-01 00:00:00+00'::timestamptz", 0),
        ("'2026-11-29 19:16:23.12+00'::timestamptz", 1_795_979_783_120_000),
        ("'1900-01-01'::date", -2_208_988_800_000_000),
        ("'2026-11-29'::date", 1_795_910_400_000_000),
    ] as [(String, Int64)])
    func timesInRangeAreExact(_ sql: String, _ expected: Int64) throws {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        #expect(try connection.query("SELECT \(unsafeSQL: sql)")[0].cell(0).unixMicroseconds() == expected)
    }

    @Test(arguments: [
        "'infinity'::timestamptz", "'-infinity'::timestamptz", "'infinity'::timestamp", "'infinity'::date", "'-infinity'::date",
        "'294276-12-31 23:59:59+00'::timestamptz", "'5874897-12-31'::date",
    ])
    func infinitiesAndFarTimesAreDecodingErrors(_ sql: String) throws {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT \(unsafeSQL: sql)")[0].cell(0).unixMicroseconds() }
        #expect(error?.kind == .decoding)
        #expect(error?.description.hasSuffix("is infinite or beyond Int64 microseconds since 1970") == true, "\(String(describing: error))")
    }
}
