import EngageCore
import Foundation
import Postgres
import Projections
import Runtime

/// `engage report`: rich versus plain engagement per category, from the read model.
enum ReportCommand: EngageCommand {
    enum Format: String, CaseIterable { case table, json, csv, html }

    static let definition = Command(
        name: "report",
        abstract: "Show engagement of rich versus plain notifications per category, with intervals and lifts.",
        options: CommonOptions.database + CommonOptions.logging + [
            .init("app", value: "id", help: "Only this app."),
            .init("category", value: "name", help: "Only this notification category."),
            .init("since", value: "date", help: "First UTC day included (YYYY-MM-DD)."),
            .init("until", value: "date", help: "Last UTC day included (YYYY-MM-DD)."),
            .init("by", value: "grouping", help: "Group by category, attachment, day or action.", default: "category"),
            .init("format", value: "format", help: "table, json, csv or html.", default: "table"),
            .init("output", value: "file", help: "Write to this file instead of standard output."),
        ])

    static func run(_ arguments: ParsedArguments) async throws {
        var logger = try CommonOptions.logger(arguments)
        logger.level = max(logger.level, .warning)
        let usage = definition.usage(path: arguments.commandPath)
        func day(_ name: String) throws -> UTCDay? {
            guard let text = arguments.value(name) else { return nil }
            guard let day = UTCDay(parsing: text) else {
                throw UsageError(code: .invalidValue, message: "invalid value '\(text)' for option '--\(name)': expected a date such as 2026-11-29", usage: usage)
            }
            return day
        }
        let query = ReportQuery(appID: arguments.value("app"), category: arguments.value("category"),
                                from: try day("since"), through: try day("until"),
                                grouping: try arguments.value("by", default: ReportGrouping.category))
        let format = try arguments.value("format", default: Format.table)
        // Reading needs no migration run (which would also recreate the views): only a current schema.
        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: setup_needsMigration(arguments))
        defer { setup.close() }
        let connection = try Connection(configuration: setup.configuration)
        defer { connection.close() }
        if let problem = try Migrator.fromSQLDirectory().pendingProblem(connection) {
            throw ReportError(description: "the database is not ready for reports (\(problem)); run: engage migrate")
        }
        let report = try query.run(on: connection, now: SystemTime().wallClock)
        let output: [UInt8]
        switch format {
        case .table: output = Array((report.renderTable() + "\n").utf8)
        case .json: output = report.renderJSON() + [UInt8(ascii: "\n")]
        case .csv: output = Array(report.renderCSV().utf8)
        case .html: output = Array(report.renderHTML().utf8)
        }
        if let file = arguments.value("output") {
            try Data(output).write(to: URL(fileURLWithPath: file))
            FileHandle.standardError.write(Data("wrote \(file)\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(output))
        }
    }
}

import EngageAPI
import EventStore

struct ReportError: Error, CustomStringConvertible {
    var description: String
}

/// A local cluster engage starts itself is migrated on the way; an external database is left alone.
private func setup_needsMigration(_ arguments: ParsedArguments) -> Bool {
    (arguments.value("database") ?? "").isEmpty
}
