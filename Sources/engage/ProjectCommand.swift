import Foundation
import Postgres
import Projections
import Runtime

/// `engage project` (the projector alone) and `engage projections rebuild [NAME]`.
enum ProjectCommand: EngageCommand {
    static let definition = Command(
        name: "project",
        abstract: "Run only the engagement projector (active or standby), until SIGTERM or SIGINT.",
        options: CommonOptions.database + CommonOptions.logging + [
            .init("batch", value: "events", help: "Log events folded per transaction.", default: "20000"),
        ])

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = try CommonOptions.logger(arguments)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        let pool = ConnectionPool(configuration: setup.configuration, size: 2)
        var configuration = Projector.Configuration()
        configuration.batchSize = try arguments.int("batch", default: 20_000, in: 1...100_000)
        configuration.failpoints = Failpoints.fromEnvironment()
        let projector = Projector(pool: pool, configuration: configuration, logger: logger,
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()))
        try await ServiceGroup(services: [("projector", projector)], logger: logger).run()
        await pool.close()
    }
}

enum ProjectionsCommand: EngageCommand {
    static let definition = Command(
        name: "projections",
        abstract: "Maintain read models folded from the event log.",
        subcommands: [
            Command(name: "rebuild",
                    abstract: "Replay the whole log into a fresh copy of a read model and swap it in atomically.",
                    options: CommonOptions.database + CommonOptions.logging,
                    arguments: [.init("name", help: "The read model: engagement (the default and only one).", optional: true)]),
        ])

    static func run(_ arguments: ParsedArguments) async throws {
        let name = arguments.argument("name") ?? EngagementStore.projectionName
        guard name == EngagementStore.projectionName else {
            throw UsageError(code: .invalidValue, message: "unknown read model '\(name)'; the read models are: engagement",
                             usage: definition.usage(path: arguments.commandPath))
        }
        let logger = try CommonOptions.logger(arguments)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        let pool = ConnectionPool(configuration: setup.configuration, size: 2)
        let bar = ProgressBar(enabled: isatty(2) == 1)
        let stopwatch = Stopwatch()
        let replayed = try await EngagementRebuild(pool: pool).run { progress in
            bar.show(done: progress.events, total: progress.total)
        }
        bar.finish()
        await pool.close()
        print("rebuilt \(name) from \(replayed) events in \(stopwatch.millisecondsText) ms")
    }
}

/// A one-line progress bar on stderr, drawn only on a terminal.
struct ProgressBar: Sendable {
    let enabled: Bool

    func show(done: Int, total: Int) {
        guard enabled else { return }
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let width = 40
        let filled = Int(fraction * Double(width))
        let line = "\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            + "] \(Int(fraction * 100))% \(done)/\(total) events"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
