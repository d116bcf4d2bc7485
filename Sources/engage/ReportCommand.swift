import EngageAPI
import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Runtime

/// `engage report`: rich versus plain engagement per category, from the read model.
enum ReportCommand {
    enum Format: String, CaseIterable, OptionValue { case table, json, csv, html }

    static let app = Option<String?>("app", value: "id", help: "Only this app.", validate: CommonOptions.appID)
    static let category = Option<String?>("category", value: "name", help: "Only this notification category.",
                                          requirement: "expected a notification category such as new_photo",
                                          parse: { CategoryFilter.normalized($0) })
    static let since = day("since", help: "First UTC day included (YYYY-MM-DD).")
    static let until = day("until", help: "Last UTC day included (YYYY-MM-DD).")
    static let grouping = Option("by", value: "grouping", help: "Group by category, attachment, day or action.", default: ReportGrouping.category)
    static let format = Option("format", value: "format", help: "table, json, csv or html.", default: Format.table)
    static let output = Option<String?>("output", value: "file", help: "Write to this file instead of standard output.",
                                        validate: .path)

    static let definition = Command(
        name: "report",
        abstract: "Show engagement of rich versus plain notifications per category, with intervals and lifts.",
        options: CommonOptions.databaseAndLogging + ReadOptions.all + [app, category, since, until, grouping, format, output],
        run: run)

    private static func day(_ name: String, help: String) -> Option<UTCDay?> {
        Option(name, value: "date", help: help, requirement: "expected a date such as 2026-11-29", parse: UTCDay.init(parsing:))
    }

    static func run(_ arguments: ParsedArguments) async throws {
        if let first = arguments[since], let last = arguments[until], first > last {
            // An empty range is a typing slip, not a question: say so instead of an empty report.
            throw arguments.usageError(.invalidValue, "option '\(since.longName)' \(first) is after option "
                + "'\(until.longName)' \(last): no day lies between them")
        }
        // Before the report is read: a file that cannot be written is a typing slip too.
        if let file = arguments[output] { try WritableFile.check(file, option: output.longName, arguments) }
        let logger = CommonOptions.quietLogger(arguments)
        let query = ReportQuery(appID: arguments[app], category: arguments[category], from: arguments[since], through: arguments[until],
                                grouping: arguments[grouping])
        // Reading needs no migration run (which would also recreate the views): only a current
        // schema. A local cluster engage starts is migrated on the way.
        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: CommonOptions.externalDatabase(arguments) == nil)
        defer { setup.close() }
        let primary = ConnectionPool(configuration: setup.configuration, size: 1)
        let now = SystemTime().wallClock
        let read: ReadDatabase.Read<EngagementReport>
        do {
            read = try await ReadOptions.withReads(arguments, primary: primary, size: 1, logger: logger) { reads in
                try await reads.read { pool in
                    try await pool.withConnection { connection in
                        if let problem = try Migrator.fromSQLDirectory().pendingProblem(connection) {
                            throw ReportError(description: "the database is not ready for reports (\(problem)); run: engage migrate")
                        }
                        return try query.run(on: connection, now: now)
                    }
                }
            }
            await primary.close()
        } catch {
            await primary.close()
            throw error
        }
        let report = read.value
        // Where it was read: a member of the JSON always, a line in human outputs when a replica
        // is configured (CSV stays data alone: the line goes to standard error).
        let readFrom = ReadOptions.sentence(read.source, arguments)
        let bytes: [UInt8]
        switch arguments[format] {
        case .table: bytes = Array((report.renderTable() + "\n" + (readFrom.map { $0 + "\n" } ?? "")).utf8)
        case .json: bytes = read.source.addingMember(to: report.renderJSON()) + [UInt8(ascii: "\n")]
        case .csv:
            bytes = Array(report.renderCSV().utf8)
            if let readFrom { FileHandle.standardError.write(Data((readFrom + "\n").utf8)) }
        case .html:
            var html = report.renderHTML()
            if let readFrom, let end = html.range(of: "</body>", options: .backwards) {
                html.insert(contentsOf: "<p class=\"read-from\">\(readFrom)</p>\n", at: end.lowerBound)
            }
            bytes = Array(html.utf8)
        }
        if let file = arguments[output] {
            do {
                try ReplacedFile.write(bytes, to: file)
            } catch {
                // Not a usage error: the arguments were fine, the write failed (a full disk).
                throw ReportError(description: "option '\(output.longName)': cannot write '\(file)': \(error)")
            }
            FileHandle.standardError.write(Data("wrote \(file)\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(bytes))
        }
    }
}

struct ReportError: Error, CustomStringConvertible {
    var description: String
}

extension ReportGrouping: OptionValue {}
