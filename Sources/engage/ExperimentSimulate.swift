import EngageCore
import EventStore
import Experiments
import Foundation
import Postgres
import Runtime

/// `engage experiment simulate`: replays an app's logged deliveries through the pipeline model
/// under a strategy and prints model-based estimates of what it would have done.
enum ExperimentSimulate {
    enum Format: String, CaseIterable, OptionValue { case text, json }

    static let app = Option<String?>("app", value: "id", help: "The app whose log is replayed.", validate: CommonOptions.appID)
    static let strategy = Option<String?>(
        "strategy", value: "name", help: "The strategy to replay: " + StrategyCatalog.standard.names.joined(separator: ", ") + ".")
    static let since = Option<String?>(
        "since", value: "time",
        help: "Count notifications sent from this RFC 3339 time or this long ago (7d, 36h, 90m); earlier ones only warm up device histories.")
    static let category = Option<String?>("category", value: "name", help: "Count only this category (repeatable, or a comma-separated list).")
    static let format = Option("format", value: "format", help: "text or json.", default: Format.text)

    static func definition(common: [any CommandOption]) -> Command {
        Command(
            name: "simulate",
            abstract: "Replay an app's logged deliveries under a strategy: model-based estimates of rich displays, timings, bytes and engagement.",
            options: common + ReadOptions.all + [app, strategy, since, category, format],
            run: run)
    }

    static func run(_ arguments: ParsedArguments) async throws {
        let app = try arguments.required(Self.app)
        let model: any AttachmentStrategyModel
        var settings = StrategyReplaySettings()
        do {
            model = try StrategyReplayOptions.strategy(try arguments.required(strategy))
            if let since = arguments[Self.since] {
                settings.countFrom = try StrategyReplayOptions.since(since, now: SystemTime().wallClock)
            }
            settings.categories = try StrategyReplayOptions.categories(arguments.all(category))
        } catch let problem as ReplayOptionProblem {
            throw arguments.usageError(.invalidValue, problem.description)
        }

        let logger = CommonOptions.quietLogger(arguments)
        // Reading needs a current schema, not a migration run: a local cluster engage starts is
        // migrated on the way, an external database is only checked.
        let replay = StrategyReplay(strategy: model, settings: settings)
        let read = try await DatabaseSetup.withPool(arguments, size: 1, logger: logger,
                                                    migrate: CommonOptions.externalDatabase(arguments) == nil) { primary in
            try await ReadOptions.withReads(arguments, primary: primary, size: 1, logger: logger) { reads in
                try await reads.read { pool in
                    if let pending = try await pool.withConnection({ try Migrator.fromSQLDirectory().pendingProblem($0) }) {
                        throw ExperimentCommandError(detail: "the database is not ready for a replay (\(pending)); run: engage migrate")
                    }
                    return try await StrategyReplayReader(pool: pool).run(app: app, replay: replay)
                }
            }
        }
        let outcome = read.value
        if outcome.undecodable > 0 {
            logger.warning("replay.undecodable", ["events": String(outcome.undecodable)])
        }
        switch arguments[format] {
        case .text:
            let readFrom = ReadOptions.sentence(read.source, arguments).map { $0 + "\n" } ?? ""
            FileHandle.standardOutput.write(Data((outcome.result.renderText() + readFrom).utf8))
        case .json: FileHandle.standardOutput.write(Data(read.source.addingMember(to: outcome.result.renderJSON()) + [UInt8(ascii: "\n")]))
        }
    }
}
