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

    static let app = Option<String?>("app", value: "id", help: "Only this app.")
    static let category = Option<String?>("category", value: "name", help: "Only this notification category.")
    static let since = day("since", help: "First UTC day included (YYYY-MM-DD).")
    static let until = day("until", help: "Last UTC day included (YYYY-MM-DD).")
    static let grouping = Option("by", value: "grouping", help: "Group by category, attachment, day or action.", default: ReportGrouping.category)
    static let format = Option("format", value: "format", help: "table, json, csv or html.", default: Format.table)
    static let output = Option<String?>("output", value: "file", help: "Write to this file instead of standard output.")

    static let definition = Command(
        name: "report",
        abstract: "Show engagement of rich versus plain notifications per category, with intervals and lifts.",
        options: CommonOptions.databaseAndLogging + [app, category, since, until, grouping, format, output],
        run: run)

    private static func day(_ name: String, help: String) -> Option<UTCDay?> {
        Option(name, value: "date", help: help, requirement: "expected a date such as 2026-11-29", parse: UTCDay.init(parsing:))
    }

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.quietLogger(arguments)
        let query = ReportQuery(appID: arguments[app], category: arguments[category], from: arguments[since], through: arguments[until],
                                grouping: arguments[grouping])
        // Reading needs no migration run (which would also recreate the views): only a current
        // schema. A local cluster engage starts is migrated on the way.
        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: CommonOptions.externalDatabase(arguments) == nil)
        defer { setup.close() }
        let connection = try Connection(configuration: setup.configuration)
        defer { connection.close() }
        if let problem = try Migrator.fromSQLDirectory().pendingProblem(connection) {
            throw ReportError(description: "the database is not ready for reports (\(problem)); run: engage migrate")
        }
        let report = try query.run(on: connection, now: SystemTime().wallClock)
        let bytes: [UInt8]
        switch arguments[format] {
        case .table: bytes = Array((report.renderTable() + "\n").utf8)
        case .json: bytes = report.renderJSON() + [UInt8(ascii: "\n")]
        case .csv: bytes = Array(report.renderCSV().utf8)
        case .html: bytes = Array(report.renderHTML().utf8)
        }
        if let file = arguments[output] {
            try Data(bytes).write(to: URL(fileURLWithPath: file))
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
