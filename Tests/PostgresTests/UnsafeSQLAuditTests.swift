import Foundation
import Testing

/// SQL text reaches PostgreSQL only through the Postgres module, and raw text only through the
/// labels `unsafeSQL` (`SQL(unsafeSQL:)`, `\(unsafeSQL:)`, `executeScript(unsafeSQL:)`): every
/// other interpolation is a `$n` parameter, and isolation levels are literals.
///
/// This audit lists every `unsafeSQL` outside the Postgres module and fails on any line not in
/// `allowed` (and on entries that no longer match, so the list stays true). A new use needs an
/// entry here, with the reason its text cannot come from a request, and a reviewer who agrees.
@Suite("unsafeSQL audit")
struct UnsafeSQLAuditTests {
    struct Allowance {
        var reason: String
        var file: String
        /// Source lines, trimmed.
        var lines: [String]
    }

    static let allowed: [Allowance] = [
        Allowance(reason: "a constant column list", file: "Sources/EventStore/EventStore.swift", lines: [
            #"SELECT \(unsafeSQL: columns)"#,
            #"SELECT \(unsafeSQL: Self.columns)"#,
        ]),
        Allowance(reason: "constant statements of the program joined into one text for the commit's round trip, "
                    + "and the number of standbys required, an Int of the configuration written as a literal (a script takes no $n)",
                  file: "Sources/EventStore/StandbyConfirmation.swift", lines: [
            #"beforeCommit = SQL(unsafeSQL: """"#,
            #"afterCommit = SQL(unsafeSQL: """"#,
            #"commit = SQL(unsafeSQL: "\(beforeCommit.text);\nCOMMIT;\n\(afterCommit.text)")"#,
            #"recheck = SQL(unsafeSQL: "SELECT pg_sleep(0.02);\n\(afterCommit.text)")"#,
            #"return SQL(unsafeSQL: "\(statement.text);\n\(commit.text)")"#,
            #"return try connection.query(SQL(unsafeSQL: "SELECT \(required) > 0 AND NOT pg_has_role('pg_read_all_stats', 'USAGE')"))[0]"#,
        ]),
        Allowance(reason: "migration and view scripts from sql/, shipped with the program and checksummed",
                  file: "Sources/EventStore/Migrator.swift", lines: [
            #"try connection.executeScript(unsafeSQL: migration.script)"#,
            #"try connection.executeScript(unsafeSQL: view.script)"#,
        ]),
        Allowance(reason: "table names of ReadModelTables.live or .rebuild, constants in the program",
                  file: "Sources/Projections/EngagementStore.swift", lines: [
            #"try connection.query("SELECT NOT EXISTS (SELECT 1 FROM \(unsafeSQL: table))")[0].decode(0, as: Bool.self)"#,
            #"FROM \(unsafeSQL: tables.states) s"#,
            #"INSERT INTO \(unsafeSQL: tables.states) AS t (app_id, notification_id, state)"#,
            #"try connection.copyIn("COPY \(unsafeSQL: tables.states) (app_id, notification_id, state) FROM STDIN (FORMAT binary)","#,
            #"INSERT INTO \(unsafeSQL: tables.engagement) AS t"#,
            #"DELETE FROM \(unsafeSQL: tables.engagement) t"#,
            #"INSERT INTO \(unsafeSQL: tables.actions) AS t"#,
            #"DELETE FROM \(unsafeSQL: tables.actions) t"#,
            #"INSERT INTO \(unsafeSQL: tables.telemetry) AS t"#,
            #"DELETE FROM \(unsafeSQL: tables.telemetry) t"#,
            #"FROM \(unsafeSQL: tables.telemetry) t"#,
        ]),
        Allowance(reason: "table names of ReadModelTables.live or .rebuild, constants in the program",
                  file: "Sources/Projections/DeviceMomentStore.swift", lines: [
            #"SELECT * FROM \(unsafeSQL: tables.devices) d WHERE d.app_id = k.app_id AND d.device_id = k.device_id OFFSET 0"#,
            #"COPY \(unsafeSQL: tables.devices) (app_id, category, device_id, \(fragment: columns)) FROM STDIN (FORMAT binary)"#,
            #"INSERT INTO \(unsafeSQL: tables.devices) AS t (app_id, category, device_id, \(fragment: columns))"#,
            #"INSERT INTO \(unsafeSQL: tables.deviceMoments) AS m (app_id, category, \(fragment: SQL.list(names.map { "\(identifier: $0)" })))"#,
            #"DELETE FROM \(unsafeSQL: tables.devices) t"#,
            #"DELETE FROM \(unsafeSQL: tables.deviceMoments) t"#,
        ]),
        Allowance(reason: "table names of ReadModelTables.live or .rebuild, constants in the program",
                  file: "Sources/Projections/DevicePairMomentStore.swift", lines: [
            #"INSERT INTO \(unsafeSQL: tables.devicePairMoments) AS m (app_id, first_category, second_category, \(fragment: columnNames))"#,
            #"DELETE FROM \(unsafeSQL: tables.devicePairMoments) t"#,
            #"SELECT k.app_id, (SELECT count(*) FROM (SELECT FROM \(unsafeSQL: tables.deviceMoments) m"#,
            #"try connection.execute("DELETE FROM \(unsafeSQL: tables.devicePairMoments) WHERE app_id = ANY(\(dropped)::text[])")"#,
            #"try connection.execute("DELETE FROM \(unsafeSQL: tables.devicePairMoments) WHERE app_id = \(app)")"#,
            #"INSERT INTO \(unsafeSQL: tables.devicePairMoments) (app_id, first_category, second_category,"#,
            #"FROM \(unsafeSQL: tables.devices) a"#,
            #"JOIN \(unsafeSQL: tables.devices) b"#,
        ]),
        Allowance(reason: "table names of ReadModelTables.live and .rebuild, the view scripts of sql/views, and a fillfactor read as an integer",
                  file: "Sources/Projections/EngagementRebuild.swift", lines: [
            #"try connection.execute("DROP TABLE IF EXISTS \(unsafeSQL: shadow)")"#,
            #"try connection.execute("DROP TABLE IF EXISTS \(unsafeSQL: table)")"#,
            #"try connection.execute("CREATE TABLE \(unsafeSQL: shadow) (LIKE \(unsafeSQL: live) INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES INCLUDING STORAGE)")"#,
            #"try connection.execute("DROP TABLE \(unsafeSQL: live) CASCADE")"#,
            #"try connection.execute("ALTER TABLE \(unsafeSQL: shadow) RENAME TO \(unsafeSQL: live)")"#,
            #"try connection.execute("ALTER TABLE \(unsafeSQL: shadow) SET (fillfactor = \(unsafeSQL: String(fillfactor)))")"#,
            #"try connection.executeScript(unsafeSQL: view.script)"#,
        ]),
        Allowance(reason: "one of two literals", file: "Sources/Experiments/ExperimentStore.swift", lines: [
            #"\(unsafeSQL: forUpdate ? "FOR UPDATE" : "")"#,
        ]),
        Allowance(reason: "a constant column list", file: "Sources/Experiments/ExperimentStore.swift", lines: [
            #"SELECT \(unsafeSQL: Self.runColumns) FROM experiment_runs"#,
        ]),
        Allowance(reason: "a constant column list", file: "Sources/Experiments/Scheduler.swift", lines: [
            #""SELECT \(unsafeSQL: ExperimentStore.runColumns) FROM experiment_runs WHERE id = \(runID)")[0])"#,
        ]),
        Allowance(reason: "an Int (FETCH takes no parameters)", file: "Sources/Experiments/ExperimentReplay.swift", lines: [
            #"SQL(unsafeSQL: "FETCH FORWARD \(chunkSize) FROM experiment_replay")"#,
        ]),
        Allowance(reason: "a constant column list", file: "Sources/Experiments/ExperimentReplay.swift", lines: [
            #"SELECT \(unsafeSQL: columns)"#,
        ]),
        Allowance(reason: "a constant column list, and Ints (FETCH takes no parameters)",
                  file: "Sources/Experiments/ExperimentTallyStore.swift", lines: [
            #"SELECT \(unsafeSQL: ExperimentReplay.columns), transaction_id >= \(String(from))::xid8"#,
            #"try connection.repeatUntilEmpty(SQL(unsafeSQL: "FETCH FORWARD 20000 FROM experiment_tallies")) { rows in"#,
            #"try connection.repeatUntilEmpty(SQL(unsafeSQL: "FETCH FORWARD \(chunkSize) FROM experiment_look")) { rows in"#,
        ]),
        Allowance(reason: "a snapshot id from pg_export_snapshot() on engage's own connection, checked to be hex digits and dashes (SET TRANSACTION SNAPSHOT takes no parameters)",
                  file: "Sources/Experiments/SplitReplay.swift", lines: [
            #"try connection.execute(SQL(unsafeSQL: "SET TRANSACTION SNAPSHOT '\(snapshot)'"))"#,
        ]),
        Allowance(reason: "an Int (FETCH takes no parameters)", file: "Sources/Experiments/StrategyReplayReader.swift", lines: [
            #"let fetch = SQL(unsafeSQL: "FETCH FORWARD \(chunkSize) FROM strategy_replay")"#,
        ]),
    ]

    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // PostgresTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// Every Swift file under Sources, as (path from the root, text).
    static func sources() throws -> [(path: String, text: String)] {
        let sources = root.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else { return [] }
        var files: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let path = String(url.path.dropFirst(root.path.count + 1))
            files.append((path, try String(contentsOf: url, encoding: .utf8)))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    @Test func everyUnsafeSQLOutsideThePostgresModuleIsAllowedWithAReason() throws {
        var found: [String: [String]] = [:]
        for (path, text) in try Self.sources() where !path.hasPrefix("Sources/Postgres/") {
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) where line.contains("unsafeSQL") {
                found[path, default: []].append(line.trimmingCharacters(in: .whitespaces))
            }
        }
        #expect(!found.isEmpty, "the audit found no file at all: is the root right? \(Self.root.path)")
        var allowed: [String: [String]] = [:]
        for allowance in Self.allowed { allowed[allowance.file, default: []] += allowance.lines }
        for (path, lines) in found.sorted(by: { $0.key < $1.key }) {
            for line in lines where !(allowed[path] ?? []).contains(line) {
                Issue.record("\(path): unsafeSQL not in UnsafeSQLAuditTests.allowed: \(line)")
            }
        }
        for (path, lines) in allowed.sorted(by: { $0.key < $1.key }) {
            for line in lines where !(found[path] ?? []).contains(line) {
                Issue.record("\(path): allowed line no longer in the source (remove it from the list): \(line)")
            }
        }
    }

    /// A session that ends holding a temporary table drops it in a transaction whose commit waits
    /// for the synchronous standby, which may have been promoted meanwhile: the old primary's
    /// shutdown then never finishes (docs/high-availability.md). Every temporary table engage
    /// makes is dropped when its transaction commits.
    @Test func everyTemporaryTableIsDroppedWhenItsTransactionCommits() throws {
        var statements = 0
        for (path, text) in try Self.sources() {
            var rest = Substring(text)
            while let start = rest.range(of: "CREATE TEMP", options: .caseInsensitive) {
                let end = rest[start.upperBound...].range(of: "\"\"\"")?.lowerBound ?? rest.endIndex
                let statement = rest[start.lowerBound..<end]
                statements += 1
                #expect(statement.range(of: "ON COMMIT DROP", options: .caseInsensitive) != nil,
                        "\(path): a temporary table not dropped at commit: \(statement.prefix(80))")
                rest = rest[start.upperBound...]
            }
        }
        #expect(statements >= 4, "the audit found \(statements) temporary tables: is the root right? \(Self.root.path)")
    }

    @Test func onlyThePostgresModuleReachesLibpq() throws {
        for (path, text) in try Self.sources() where !path.hasPrefix("Sources/Postgres/") {
            #expect(!text.contains("import CLibPQ"), "\(path) imports libpq")
            #expect(!text.contains("PQexec"), "\(path) calls libpq")
        }
    }
}
