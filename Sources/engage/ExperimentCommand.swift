import EngageCore
import Experiments
import Foundation
import Postgres
import Projections
import Runtime

/// `engage experiment create|list|show|start|stop|run|runs|simulate`.
enum ExperimentCommand: EngageCommand {
    static let idArgument = Command.Argument("id", help: "The experiment id.")
    static let common = CommonOptions.database + CommonOptions.logging

    static let definition = Command(
        name: "experiment",
        abstract: "Create, start, stop and analyse A/B experiments of attachment strategies.",
        subcommands: [
            Command(name: "create", abstract: "Create a draft experiment from a JSON definition.",
                    options: common + [.init("file", value: "path", help: "The definition as JSON ('-' for standard input).")]),
            Command(name: "list", abstract: "List experiments, newest first.",
                    options: common + [.init("app", value: "id", help: "Only this app's experiments.")]),
            Command(name: "show", abstract: "Print an experiment: definition, latest decision and lifecycle from the log.",
                    options: common + [.init("format", value: "text|json", help: "text, or the definition as JSON.", default: "text")],
                    arguments: [idArgument]),
            Command(name: "start", abstract: "Start a draft experiment; its schedule begins now.", options: common, arguments: [idArgument]),
            Command(name: "stop", abstract: "Stop an experiment; no further runs are scheduled.", options: common, arguments: [idArgument]),
            Command(name: "run", abstract: "Analyse an experiment now and print the result as JSON.", options: common, arguments: [idArgument]),
            Command(name: "runs", abstract: "List an experiment's analysis runs, newest first.",
                    options: common + [.init("limit", value: "n", help: "Most runs listed.", default: "50")],
                    arguments: [idArgument]),
            ExperimentSimulate.definition(common: common),
        ])

    static func run(_ arguments: ParsedArguments) async throws {
        // The subcommand's synopsis, not the `experiment <subcommand>` one.
        let usage = arguments.command.usage(path: arguments.commandPath)
        let subcommand = arguments.commandPath.last ?? ""
        if subcommand == "simulate" {
            try await ExperimentSimulate.run(arguments, usage: usage)
            return
        }
        if ["show", "start", "stop", "run", "runs"].contains(subcommand), arguments.argument("id") == nil {
            throw UsageError(code: .missingArgument, message: "missing argument <id>", usage: usage)
        }
        if subcommand == "create" { _ = try arguments.required("file") }
        var logger = try CommonOptions.logger(arguments)
        logger.level = max(logger.level, .warning)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        let pool = ConnectionPool(configuration: setup.configuration, size: 2)
        let store = ExperimentStore(pool: pool)
        func id() -> String { arguments.argument("id") ?? "" }
        do {
            switch subcommand {
            case "create":
                let path = try arguments.required("file")
                let bytes: [UInt8]
                if path == "-" {
                    bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
                } else {
                    guard let data = FileManager.default.contents(atPath: path) else {
                        throw UsageError(code: .invalidValue, message: "cannot read '\(path)' for option '--file'", usage: usage)
                    }
                    bytes = Array(data)
                }
                let record = try await store.create(json: bytes)
                print("created experiment \(record.id) (draft); start it with: engage experiment start \(record.id)")
            case "list":
                let records = try await store.list(app: arguments.value("app"))
                let rows = records.map { record in
                    [record.id, record.definition.appID, record.status.rawValue, record.definition.schedule.expression,
                     record.definition.arms.map { "\($0.name):\($0.strategy.rawValue)" }.joined(separator: ","),
                     record.definition.startAt?.rfc3339 ?? "-"]
                }
                print(TextTable(header: ["ID", "APP", "STATUS", "SCHEDULE", "ARMS", "STARTED"], rows: rows).render())
            case "show":
                let id = id()
                let format = try arguments.value("format", default: ShowFormat.text)
                guard let record = try await store.get(id) else { throw ExperimentStoreError(code: .notFound, experimentID: id, detail: "no experiment \(id)") }
                if format == .json {
                    print(String(decoding: record.definition.canonicalJSON, as: UTF8.self))
                } else {
                    let lifecycle = try await store.history(of: record.definition).filter { $0.action != .analysed }.map {
                        ExperimentSummaryText.LifecycleLine(action: $0.action.rawValue, at: $0.occurredAt, payload: $0.payload)
                    }
                    let latest = try await store.runs(id, limit: 50).first { $0.status == .done }.map {
                        ExperimentSummaryText.LatestRun(runID: $0.id, scheduledFor: $0.scheduledFor, decisionCode: $0.decision ?? "-",
                                                        result: $0.result)
                    }
                    print(ExperimentSummaryText(definition: record.definition, latestRun: latest, lifecycle: lifecycle).render())
                }
            case "start":
                let record = try await store.start(id())
                print("started \(record.id) at \(record.definition.startAt?.rfc3339 ?? "-"); schedule \(record.definition.schedule.expression)")
            case "stop":
                let record = try await store.stop(id())
                print("stopped \(record.id)")
            case "run":
                var configuration = Scheduler.Configuration()
                let failpoints = Failpoints.fromEnvironment()
                configuration.failpoint = { try failpoints.hit($0) }
                let scheduler = Scheduler(pool: pool, configuration: configuration, logger: logger)
                let run = try await scheduler.runNow(experimentID: id())
                guard let result = run.result else {
                    throw ExperimentCommandError(detail: "run \(run.id) is \(run.status.rawValue): \(run.error ?? "no result")")
                }
                print(String(decoding: result, as: UTF8.self))
            case "runs":
                let runs = try await store.runs(id(), limit: try arguments.int("limit", default: 50, in: 1...10_000))
                let rows = runs.map { run in
                    [String(run.id), run.scheduledFor.rfc3339, run.isManual ? "manual" : "schedule", run.status.rawValue,
                     String(run.attempts), run.finishedAt?.rfc3339 ?? "-", run.decision ?? "-", run.error ?? ""]
                }
                print(TextTable(header: ["RUN", "SCHEDULED FOR", "TRIGGER", "STATUS", "ATTEMPTS", "FINISHED", "DECISION", "ERROR"],
                                rows: rows).render())
            default:
                break
            }
        } catch let error as ExperimentStoreError {
            await pool.close()
            switch error.code {
            case .invalidDefinition:
                let lines = error.problems.map { "  \($0.field): \($0.problem)" }.joined(separator: "\n")
                throw ExperimentCommandError(detail: "the definition is invalid:\n" + lines)
            default:
                throw ExperimentCommandError(detail: error.description)
            }
        }
        await pool.close()
    }
}

/// What `engage experiment show` prints.
enum ShowFormat: String, CaseIterable {
    case text, json
}

/// A refused experiment command: printed as `error: <detail>`, exit status 1.
struct ExperimentCommandError: Error, CustomStringConvertible {
    var detail: String
    var description: String { detail }
}
