import EngageCore
import EventStore
import Experiments
import Foundation
import Postgres
import Runtime

/// `engage experiment simulate`: replays an app's logged deliveries through the pipeline model
/// under a strategy and prints model-based estimates of what it would have done.
enum ExperimentSimulate {
    enum Format: String, CaseIterable { case text, json }

    static func definition(common: [Command.Option]) -> Command {
        Command(
            name: "simulate",
            abstract: "Replay an app's logged deliveries under a strategy: model-based estimates of rich displays, timings, bytes and engagement.",
            options: common + [
                .init("app", value: "id", help: "The app whose log is replayed."),
                .init("strategy", value: "name", help: "The strategy to replay: " + StrategyCatalog.standard.names.joined(separator: ", ") + "."),
                .init("since", value: "time", help: "Count notifications sent from this RFC 3339 time or this long ago (7d, 36h, 90m); earlier ones only warm up device histories."),
                .init("category", value: "name", help: "Count only this category (repeatable, or a comma-separated list)."),
                .init("format", value: "format", help: "text or json.", default: "text"),
            ])
    }

    static func run(_ arguments: ParsedArguments, usage: String) async throws {
        let app = try arguments.required("app")
        let format = try arguments.value("format", default: Format.text)
        let strategy: any AttachmentStrategyModel
        var settings = StrategyReplaySettings()
        do {
            strategy = try StrategyReplayOptions.strategy(try arguments.required("strategy"))
            if let since = arguments.value("since") {
                settings.countFrom = try StrategyReplayOptions.since(since, now: SystemTime().wallClock)
            }
            settings.categories = try StrategyReplayOptions.categories(arguments.values("category"))
        } catch let problem as ReplayOptionProblem {
            throw UsageError(code: .invalidValue, message: problem.description, usage: usage)
        }

        var logger = try CommonOptions.logger(arguments)
        logger.level = max(logger.level, .warning)
        // Reading needs a current schema, not a migration run: a local cluster engage starts is
        // migrated on the way, an external database is only checked.
        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: (arguments.value("database") ?? "").isEmpty)
        defer { setup.close() }
        let check = try Connection(configuration: setup.configuration)
        let pending = try Migrator.fromSQLDirectory().pendingProblem(check)
        check.close()
        if let pending {
            throw ExperimentCommandError(detail: "the database is not ready for a replay (\(pending)); run: engage migrate")
        }
        let pool = ConnectionPool(configuration: setup.configuration, size: 1)
        let outcome: StrategyReplayReader.Outcome
        do {
            outcome = try await StrategyReplayReader(pool: pool).run(
                app: app, replay: StrategyReplay(strategy: strategy, settings: settings))
        } catch {
            await pool.close()
            throw error
        }
        await pool.close()
        if outcome.undecodable > 0 {
            logger.warning("replay.undecodable", ["events": String(outcome.undecodable)])
        }
        switch format {
        case .text: FileHandle.standardOutput.write(Data(outcome.result.renderText().utf8))
        case .json: FileHandle.standardOutput.write(Data(outcome.result.renderJSON() + [UInt8(ascii: "\n")]))
        }
    }
}
