import Foundation
@testable import Postgres
import Testing
import TestSupport

@Suite("Connection against a real PostgreSQL")
struct ConnectionTests {
    let configuration: PostgresConfiguration

    init() throws {
        configuration = try TestPostgres.freshDatabase(migrated: false)
    }

    @Test func parametersTravelSeparatelyFromText() throws {
        let connection = try Connection(configuration: configuration)
        let hostile = "'; DROP TABLE x; --"
        let rows = try connection.query("SELECT \(hostile)::text AS value, \(42)::int8 AS answer, \(Optional<String>.none)::text AS nothing")
        #expect(try rows[0].decode("value", as: String.self) == hostile)
        #expect(try rows[0].decode("answer", as: Int.self) == 42)
        #expect(try rows[0].decode("nothing", as: String?.self) == nil)
    }

    /// A connection never made and a connection that broke are both `.connection` errors; only the
    /// first says nothing was done (`engage` exits 69 for it, 1 for the other).
    @Test func onlyAConnectionNeverMadeSaysItFailedToConnect() throws {
        let refused = #expect(throws: PostgresError.self) {
            _ = try Connection(configuration: PostgresConfiguration(connectionString: "host=127.0.0.1 port=1 dbname=x"))
        }
        #expect(refused?.kind == .connection && refused?.failedToConnect == true, "\(String(describing: refused))")

        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        let backend = try connection.query("SELECT pg_backend_pid()")[0].decode(0, as: Int.self)
        let administrator = try Connection(configuration: configuration)
        defer { administrator.close() }
        // Waits (up to 10 s) until the backend has exited.
        #expect(try administrator.query("SELECT pg_terminate_backend(\(backend), 10000)")[0].decode(0, as: Bool.self))
        let broken = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        #expect(broken?.isConnectionProblem == true && broken?.failedToConnect == false, "\(String(describing: broken))")
    }

    @Test func decodesBinaryValuesOfEveryType() throws {
        let connection = try Connection(configuration: configuration)
        let id = UUID(uuidString: "0F8FAD5B-D9CB-469F-A165-70867728950E")!
        let rows = try connection.query("""
            SELECT true, (-7)::int2, (-70000)::int4, (-9000000000)::int8, 2.5::float8, 1.25::float4,
                   123.456::numeric, 'héllo'::text, \(id)::uuid,
                   '2026-11-29T19:16:23.123456Z'::timestamptz, '{"a": [1, 2]}'::jsonb,
                   ARRAY[1, 2, 3]::int8[], ARRAY['x', 'y"z']::text[], '1999-12-31'::date, '12345'::xid8
            """)
        let row = rows[0]
        #expect(try row.decode(0, as: Bool.self) == true)
        #expect(try row.decode(1, as: Int.self) == -7)
        #expect(try row.decode(2, as: Int.self) == -70000)
        #expect(try row.decode(3, as: Int64.self) == -9_000_000_000)
        #expect(try row.decode(4, as: Double.self) == 2.5)
        #expect(try row.decode(5, as: Double.self) == 1.25)
        #expect(abs(try row.decode(6, as: Double.self) - 123.456) < 1e-9)
        #expect(try row.decode(7, as: String.self) == "héllo")
        #expect(try row.decode(8, as: UUID.self) == id)
        #expect(try row.decode(9, as: PostgresTimestamp.self) == PostgresTimestamp(unixMicroseconds: 1_795_979_783_123_456))
        #expect(try row.decode(10, as: String.self) == #"{"a": [1, 2]}"#)
        #expect(try row.decode(11, as: [Int64].self) == [1, 2, 3])
        #expect(try row.decode(12, as: [String].self) == ["x", "y\"z"])
        #expect(try row.decode(13, as: PostgresTimestamp.self) == PostgresTimestamp(unixMicroseconds: 946_598_400_000_000))
        #expect(try row.decode(14, as: UInt64.self) == 12345)
    }

    @Test(arguments: [
        (1_795_979_783_123_456, "2026-11-29 19:16:23.123456+00"),
        (946_684_800_000_000, "2000-01-01 00:00:00+00"),
        (946_598_399_999_999, "1999-12-30 23:59:59.999999+00"),
        (-1, "1969-12-31 23:59:59.999999+00"),
        (-62_135_596_800_000_000, "0001-01-01 00:00:00+00"),
    ] as [(Int64, String)])
    func timestampParametersTravelInBinary(_ microseconds: Int64, _ text: String) throws {
        let connection = try Connection(configuration: configuration)
        try connection.execute("SET TIME ZONE 'UTC'")
        let timestamp = PostgresTimestamp(unixMicroseconds: microseconds)
        let row = try connection.query("SELECT \(timestamp)::text, \(timestamp), \(Date(timeIntervalSince1970: Double(microseconds) / 1e6))::text")[0]
        #expect(try row.decode(0, as: String.self) == text)
        #expect(try row.decode(1, as: PostgresTimestamp.self) == timestamp)
        #expect(try row.decode(2, as: String.self) == text || abs(microseconds) > 1 << 52)
    }

    @Test func arrayParametersRoundTrip() throws {
        let connection = try Connection(configuration: configuration)
        let words = ["plain", "with \"quotes\"", "back\\slash", "comma,brace}", ""]
        let rows = try connection.query("SELECT \(words)::text[], \([Int64(1), -2])::int8[]")
        #expect(try rows[0].decode(0, as: [String].self) == words)
        #expect(try rows[0].decode(1, as: [Int64].self) == [1, -2])
    }

    @Test func serverErrorsKeepSQLStateDetailAndHint() throws {
        let connection = try Connection(configuration: configuration)
        try connection.execute("CREATE TABLE items (id int PRIMARY KEY)")
        try connection.execute("INSERT INTO items VALUES (1)")
        let error = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO items VALUES (1)") }
        #expect(error?.kind == .server)
        #expect(error?.sqlState == "23505")
        #expect(error?.isUniqueViolation == true)
        #expect(error?.detail == "Key (id)=(1) already exists.")
        let hinted = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1 +") }
        #expect(hinted?.sqlState == "42601")
        // The connection is still usable after errors.
        #expect(try connection.query("SELECT count(*) FROM items")[0].decode(0, as: Int.self) == 1)
    }

    @Test func serverErrorDescriptionsNeverQuoteAValue() throws {
        let connection = try Connection(configuration: configuration)
        let secret = "device-4711-secret"
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT \(secret)::int8") }
        #expect(error?.sqlState == "22P02")
        #expect(error?.message.contains(secret) == true)
        // What logs print ("\(error)") is the SQLSTATE and its class; the server's words stay in debugDescription.
        #expect(error.map { "\($0)" } == "postgres server error 22P02: data exception")
        #expect(error?.debugDescription.contains(secret) == true)
        try connection.execute("CREATE TABLE keyed (id text PRIMARY KEY)")
        try connection.execute("INSERT INTO keyed VALUES (\(secret))")
        let duplicate = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO keyed VALUES (\(secret))") }
        #expect(duplicate?.detail?.contains(secret) == true)
        #expect(duplicate?.description == "postgres server error 23505: integrity constraint violation")
    }

    @Test func textParameterWithNulIsRefusedBeforeSending() throws {
        let connection = try Connection(configuration: configuration)
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT \("a\u{0}b")::text") }
        #expect(error?.kind == .encoding)
    }

    @Test func transactionRollsBackWhenBodyThrows() throws {
        struct Boom: Error {}
        let connection = try Connection(configuration: configuration)
        try connection.execute("CREATE TABLE ledger (n int)")
        #expect(throws: Boom.self) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO ledger VALUES (1)")
                throw Boom()
            }
        }
        try connection.transaction { connection in try connection.execute("INSERT INTO ledger VALUES (2)") }
        #expect(try connection.query("SELECT array_agg(n)::int8[] FROM ledger")[0].decode(0, as: [Int64].self) == [2])
        #expect(connection.isIdle)
    }

    @Test func transactionsRunAtTheIsolationLevelAsked() throws {
        let connection = try Connection(configuration: configuration)
        let levels: [(TransactionIsolation, String)] = [
            (.readCommitted, "read committed"), (.repeatableRead, "repeatable read"), (.serializable, "serializable"),
        ]
        for (isolation, shown) in levels {
            let level = try connection.transaction(isolation: isolation) { connection in
                try connection.query("SHOW transaction_isolation")[0].decode(0, as: String.self)
            }
            #expect(level == shown)
        }
    }

    @Test func binaryCopyStoresTypedRows() throws {
        let connection = try Connection(configuration: configuration)
        try connection.execute("CREATE TABLE copied (id uuid, name text, at timestamptz, body jsonb, n int8, note text)")
        var encoder = BinaryCopyEncoder()
        for index in 0..<500 {
            encoder.beginRow(columnCount: 6)
            encoder.appendUUID([UInt8](repeating: UInt8(index % 256), count: 15) + [UInt8(index / 256)])
            encoder.appendText("name-\(index)")
            encoder.appendTimestamp(unixMicroseconds: 1_780_000_000_000_000 + Int64(index))
            encoder.appendJSONB(Array(#"{"index": \#(index)}"#.utf8))
            encoder.appendInt64(Int64(index) - 250)
            if index % 2 == 0 { encoder.appendNull() } else { encoder.appendText("odd") }
        }
        let copied = try connection.copyIn("COPY copied FROM STDIN (FORMAT binary)", data: encoder.finish())
        #expect(copied == 500)
        let rows = try connection.query("SELECT count(*), sum(n), count(note), max((body->>'index')::int) FROM copied")
        #expect(try rows[0].decode(0, as: Int.self) == 500)
        #expect(try rows[0].decode(1, as: Int.self) == (0..<500).reduce(0) { $0 + $1 - 250 })
        #expect(try rows[0].decode(2, as: Int.self) == 250)
        #expect(try rows[0].decode(3, as: Int.self) == 499)
    }

    @Test func failedCopyStoresNothingAndReportsTheServerError() throws {
        let connection = try Connection(configuration: configuration)
        try connection.execute("CREATE TABLE strict (id int8 PRIMARY KEY)")
        var encoder = BinaryCopyEncoder()
        for id in [1, 2, 2] as [Int64] {
            encoder.beginRow(columnCount: 1)
            encoder.appendInt64(id)
        }
        let error = #expect(throws: PostgresError.self) {
            try connection.copyIn("COPY strict FROM STDIN (FORMAT binary)", data: encoder.finish())
        }
        #expect(error?.sqlState == "23505")
        #expect(try connection.query("SELECT count(*) FROM strict")[0].decode(0, as: Int.self) == 0)
        #expect(connection.isIdle)
    }

    @Test(.timeLimit(.minutes(1)))
    func listenReceivesNotificationsFromAnotherSession() throws {
        let listener = try Connection(configuration: configuration)
        let sender = try Connection(configuration: configuration)
        try listener.listen("engage_test")
        #expect(try listener.waitForNotifications(timeout: .milliseconds(50)).isEmpty)
        try sender.notify("engage_test", payload: "hello")
        // Sent and committed: wait for it to arrive, however long a busy machine takes.
        var received = try listener.waitForNotifications(timeout: .seconds(5))
        while received.isEmpty { received = try listener.waitForNotifications(timeout: .seconds(5)) }
        #expect(received.map(\.payload) == ["hello"])
        #expect(received.first?.senderPID == sender.backendPID)
    }

    @Test func scriptsRunSeveralStatementsAndReportTheFirstError() throws {
        let connection = try Connection(configuration: configuration)
        try connection.executeScript(unsafeSQL: "CREATE TABLE s (n int); INSERT INTO s VALUES (1); INSERT INTO s VALUES (2);")
        #expect(try connection.query("SELECT count(*) FROM s")[0].decode(0, as: Int.self) == 2)
        let error = #expect(throws: PostgresError.self) { try connection.executeScript(unsafeSQL: "SELECT 1; SELECT * FROM missing_table;") }
        #expect(error?.sqlState == "42P01")
    }

    @Test func theConnectionStringOverridesEngageDefaultsButNotTheEncoding() throws {
        let plain = try Connection(configuration: configuration)
        #expect(try plain.query("SHOW application_name")[0].decode(0, as: String.self) == "engage")
        var custom = configuration
        custom.connectionString += " application_name=from-url client_encoding=LATIN1"
        let overridden = try Connection(configuration: custom)
        #expect(try overridden.query("SHOW application_name")[0].decode(0, as: String.self) == "from-url")
        #expect(try overridden.query("SHOW client_encoding")[0].decode(0, as: String.self) == "UTF8")
    }

    /// `engage db psql` hands psql the string without the password (its command line is
    /// anyone's to read) and the password apart: together they connect as the string did.
    @Test(arguments: ["postgresql://engage:s3cr%27et@127.0.0.1:5432/engage?sslmode=disable&application_name=x",
                      "host=127.0.0.1 port=5432 password='s3cr\\'et' dbname=engage user=engage"])
    func aPasswordIsSeparatedFromTheConnectionString(_ connectionString: String) throws {
        let separated = PostgresConfiguration.separatingPassword(connectionString)
        #expect(separated.password == "s3cr'et")
        #expect(!separated.connectionString.contains("s3cr"))
        let before = try #require(PostgresConfiguration.parsed(connectionString)).filter { $0.keyword != "password" }
        let after = try #require(PostgresConfiguration.parsed(separated.connectionString))
        #expect(after.map(\.keyword) == before.map(\.keyword) && after.map(\.value) == before.map(\.value))
        let none = PostgresConfiguration.separatingPassword("postgresql://engage@127.0.0.1/engage")
        #expect(none.connectionString == "postgresql://engage@127.0.0.1/engage" && none.password == nil)
    }

    @Test func badConnectionStringIsAConnectionError() throws {
        let error = #expect(throws: PostgresError.self) {
            _ = try Connection(configuration: PostgresConfiguration(connectionString: "host=/nonexistent/socket port=1 dbname=x", connectTimeoutSeconds: 1))
        }
        #expect(error?.kind == .connection)
        #expect(error?.isConnectionProblem == true)
    }
}

@Suite("SQL interpolation")
struct SQLTests {
    @Test func valuesBecomePlaceholders() {
        let app = "app'1"
        let sql: SQL = "SELECT * FROM t WHERE a = \(app) AND b = \(5) AND c = \(identifier: "we\"ird")"
        #expect(sql.text == #"SELECT * FROM t WHERE a = $1 AND b = $2 AND c = "we""ird""#)
        // A quote followed by a combining mark is one Character: doubled all the same.
        let marked: SQL = "SELECT 1 AS \(identifier: "a\"\u{301}b")"
        #expect(Array(marked.text.unicodeScalars) == Array("SELECT 1 AS \"a\"\"\u{301}b\"".unicodeScalars))
        #expect(sql.parameters.map(\.bytes) == [Array("app'1".utf8), Array("5".utf8)])
        #expect(sql.description.contains("redacted"))
        #expect(!sql.description.contains("app'1"))
    }

    @Test func fragmentsAreRenumbered() {
        let filter: SQL = "x = \(1) AND y = \(2)"
        var sql: SQL = "SELECT \(0) WHERE "
        sql.append(filter)
        #expect(sql.text == "SELECT $1 WHERE x = $2 AND y = $3")
        #expect(sql.parameters.count == 3)
    }

    @Test func configurationNeverPrintsPasswords() {
        #expect(PostgresConfiguration(connectionString: "postgresql://u:secret@h:5432/db").description == "postgresql://u:***@h:5432/db")
        #expect(PostgresConfiguration(connectionString: "host=h password=secret dbname=d").description == "host=h password=*** dbname=d")
        // Key/value pairs as libpq reads them: spaces around "=", quoted values, tabs between pairs.
        let redactedPairs = [
            "host=127.0.0.1 port=1 password = s3cret dbname=engage": "host=127.0.0.1 port=1 password = *** dbname=engage",
            "host=h password= s3cret": "host=h password= ***",
            "host=h password='my s3cret' dbname=d": "host=h password=*** dbname=d",
            "host=h password='it\\'s s3cret'": "host=h password=***",
            "host=h\tpassword=s3cret": "host=h\tpassword=***",
            "password='unterminated s3cret": "password=***",
            "host=h password s3cret": "host=h password ***",
            "application_name='password=s3cret' passwordx=1": "application_name='password=s3cret' passwordx=1",
        ]
        for (input, output) in redactedPairs {
            #expect(PostgresConfiguration(connectionString: input).description == output, "\(input)")
        }
        // A URL's query carries the password too, with or without a user, its keyword encoded or not.
        let redacted = [
            "postgresql://db.example/engage?password=s3cret": "postgresql://db.example/engage?password=***",
            "postgresql://engage@db.example/engage?sslmode=require&password=s3cret&x=1":
                "postgresql://engage@db.example/engage?sslmode=require&password=***&x=1",
            "postgres://u:pa?ss@h/db?%70assword=s3cret": "postgres://u:***@h/db?%70assword=***",
            "postgresql://h/db?passwordx=1": "postgresql://h/db?passwordx=1",
            // An '@' in the query's password is no user's end (libpq looks before the first '/').
            "postgresql://h/db?password=a@b": "postgresql://h/db?password=***",
            "postgresql://h:5432/db?password=x@y&sslmode=require": "postgresql://h:5432/db?password=***&sslmode=require",
        ]
        for (input, output) in redacted { #expect(PostgresConfiguration(connectionString: input).description == output) }
        #expect(PostgresConfiguration(connectionString: "postgresql://u@h/db?x=1").withDatabase("other").connectionString == "postgresql://u@h/other?x=1")
    }

    @Test func aConnectionStringIsReadableWhenLibpqReadsItAndItsPortsAreNumbers() {
        for readable in ["", "postgresql://u:p@h1:5432,h2:5433/db?sslmode=disable", "postgres://h/db", "host=/tmp port=5432,,65535 dbname=d",
                         "postgresql://[::1]:5432/db", "host=h port="] {
            #expect(PostgresConfiguration.isReadable(readable), "\(readable)")
        }
        for unreadable in ["nonsense", "host='h", "postgresql://h:notaport/db", "postgresql://h:0/db", "port=65536", "port=5432,x",
                           "postgresql://h/db?nokeyword=1", "port=\u{0664}\u{0664}"] {
            #expect(!PostgresConfiguration.isReadable(unreadable), "\(unreadable)")
        }
    }

    @Test func anotherRoleReplacesTheUserAndDropsThePassword() {
        func asRole(_ connectionString: String) -> String { PostgresConfiguration(connectionString: connectionString).withUser("r-1").connectionString }
        let expected = [
            // URLs: multi-host, the query's keywords (percent-encoded ones too) read last by libpq,
            // a '?' in the password.
            "postgresql://u:secret@h1:5432,h2:5433/db?sslmode=disable": "dbname='db' host='h1,h2' port='5432,5433' sslmode='disable' user='r-1'",
            "postgres://h/db": "dbname='db' host='h' user='r-1'",
            "postgresql://u@h": "host='h' user='r-1'",
            "postgresql://h/db?user=u&sslmode=disable&password=p": "dbname='db' host='h' sslmode='disable' user='r-1'",
            "postgresql://h/db?%75ser=u": "dbname='db' host='h' user='r-1'",
            "postgresql://u:pa?ss@h/db": "dbname='db' host='h' user='r-1'",
            // Key/value pairs: quoted values, spaces around '=', a tab.
            "host=/tmp/s port=5432 user=postgres dbname=d": "dbname='d' host='/tmp/s' port='5432' user='r-1'",
            "host=h password=secret dbname=d": "dbname='d' host='h' user='r-1'",
            "host=h password='a b' dbname=d": "dbname='d' host='h' user='r-1'",
            "host=h password = x\tdbname='d e'": "dbname='d e' host='h' user='r-1'",
            // Not a connection string libpq reads: left for the connection to report.
            "host='h": "host='h user='r-1'",
        ]
        for (input, output) in expected { #expect(asRole(input) == output, "\(input)") }
    }

    /// Several hosts: engage asks for the one that takes writes unless the string says otherwise
    /// (libpq takes the last value given, and engage's defaults come before the string). One host:
    /// nothing added.
    @Test func severalHostsMeanTheWritableOne() {
        func attrs(_ connectionString: String) -> [String] {
            PostgresConfiguration(connectionString: connectionString).connectionDefaults.filter { $0.keyword == "target_session_attrs" }.map(\.value)
        }
        #expect(attrs("postgresql://u@h1:5432,h2:5433/db") == ["read-write"])
        #expect(attrs("host=/a,/b port=1,2 dbname=d") == ["read-write"])
        #expect(attrs("hostaddr=127.0.0.1,127.0.0.2 dbname=d") == ["read-write"])
        #expect(attrs("postgresql://u@h1/db") == [])
        #expect(attrs("host=/tmp/s port=5432 dbname=d") == [])
        #expect(attrs("host='h") == [])
        // A read replica's URL: its hosts are standbys by design.
        var replica = PostgresConfiguration(connectionString: "postgresql://u@h1:5432,h2:5433/db")
        replica.writes = false
        #expect(replica.connectionDefaults.allSatisfy { $0.keyword != "target_session_attrs" })
    }
}
