import Postgres
import Testing
import TestSupport

/// The reads the experiment replay's hot loop uses: repeated FETCHes with the next one in flight,
/// and values compared and parsed where libpq holds them.
@Suite("Reading rows in place")
struct ReadingInPlaceTests {
    let configuration: PostgresConfiguration

    init() throws {
        configuration = try TestPostgres.freshDatabase(migrated: false)
    }

    @Test(.timeLimit(.minutes(1)))
    func repeatedFetchesReadTheWholeCursorInOrder() throws {
        let connection = try Connection(configuration: configuration)
        let (values, chunks) = try connection.transaction { connection in
            try connection.execute("DECLARE numbers NO SCROLL CURSOR FOR SELECT n FROM generate_series(1, 1000) n")
            var values: [Int] = [], chunks: [Int] = []
            try connection.repeatUntilEmpty("FETCH FORWARD 64 FROM numbers") { rows in
                chunks.append(rows.rowCount)
                for row in rows.rows { values.append(try row.decode(0)) }
            }
            return (values, chunks)
        }
        #expect(values == Array(1...1000))
        #expect(chunks == Array(repeating: 64, count: 15) + [40])
    }

    @Test(.timeLimit(.minutes(1)))
    func aFailureWhileTheNextFetchIsInFlightLeavesTheConnectionUsable() throws {
        struct Stop: Error {}
        let connection = try Connection(configuration: configuration)
        var seen = 0
        #expect(throws: Stop.self) {
            try connection.transaction { connection in
                try connection.execute("DECLARE numbers NO SCROLL CURSOR FOR SELECT n FROM generate_series(1, 1000) n")
                try connection.repeatUntilEmpty("FETCH FORWARD 100 FROM numbers") { rows in
                    seen += rows.rowCount
                    if seen >= 300 { throw Stop() }
                }
            }
        }
        #expect(seen == 300)
        #expect(connection.isIdle)
        #expect(try connection.query("SELECT 7")[0].decode(0, as: Int.self) == 7)
        // A server error in a later FETCH is thrown as such, and the connection recovers too.
        let error = #expect(throws: PostgresError.self) {
            try connection.repeatUntilEmpty("FETCH FORWARD 1 FROM no_such_cursor") { _ in }
        }
        #expect(error?.sqlState == "34000")
        #expect(try connection.query("SELECT 8")[0].decode(0, as: Int.self) == 8)
    }

    @Test(.timeLimit(.minutes(1)))
    func cellsCompareAndParseInPlace() throws {
        let connection = try Connection(configuration: configuration)
        let first = try connection.query("""
            SELECT 'sim-1-10'::text, NULL::text, ''::text, '0f8fad5b-d9cb-469f-a165-70867728950e'::uuid,
                   '9007199254740992'::text, '12a'::text, '-1'::text, '1234567890123456789'::text
            """)[0]
        let second = try connection.query("SELECT 'sim-1-10'::text, NULL::text, 'sim-1-1'::text")[0]
        #expect(first.cell(0).hasSameBytes(as: second.cell(0)))
        #expect(!first.cell(0).hasSameBytes(as: second.cell(2)))
        #expect(first.cell(1).hasSameBytes(as: second.cell(1)))
        #expect(!first.cell(1).hasSameBytes(as: first.cell(2)))
        #expect(!first.cell(2).hasSameBytes(as: first.cell(1)))

        let candidates = [Array("sim-1-1".utf8), Array("".utf8), Array("sim-1-10".utf8)]
        #expect(first.cell(0).position(in: candidates) == 2)
        #expect(first.cell(2).position(in: candidates) == 1)
        #expect(first.cell(1).position(in: candidates) == nil)
        #expect(second.cell(2).position(in: candidates) == 0)
        #expect(first.cell(0).position(in: []) == nil)

        let uuid = try first.cell(3).uuidHalves()
        #expect(uuid.high == 0x0f8f_ad5b_d9cb_469f && uuid.low == 0xa165_7086_7728_950e)
        #expect(throws: PostgresError.self) { try first.cell(0).uuidHalves() }

        #expect(first.cell(4).decimalInteger(upTo: 1 << 53) == 1 << 53)
        #expect(first.cell(4).decimalInteger(upTo: (1 << 53) - 1) == nil)
        for column in [1, 2, 5, 6, 7] {
            #expect(first.cell(column).decimalInteger(upTo: .max) == nil, "column \(column)")
        }
    }
}
