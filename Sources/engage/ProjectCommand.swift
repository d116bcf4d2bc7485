import Foundation
import Postgres
import Projections
import Runtime

/// `engage project`: the projector alone.
enum ProjectCommand {
    static let batch = Option("batch", value: "events", help: "Log events folded per transaction.",
                              default: Projector.Configuration().batchSize, validate: .range(1...100_000))
    /// Also `engage serve`'s (`ServerOptions.all`).
    static let readInterval = Option(
        "projector-read-interval", value: "ms",
        help: "Least milliseconds between two reads of the log once the projector is at its end: fewer, larger batches under steady load for up to this much more lag (0: read again as soon as a batch commits; at most the projector's poll interval, 1000).",
        environment: "ENGAGE_PROJECTOR_READ_INTERVAL", default: Int(Projector.Configuration().readInterval / .milliseconds(1)),
        validate: .range(0...Int(Projector.Configuration().pollInterval / .milliseconds(1))))

    static let definition = Command(
        name: "project",
        abstract: "Run only the engagement projector (active or standby), until SIGTERM or SIGINT.",
        options: CommonOptions.databaseAndLogging + [batch, readInterval],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.logger(arguments)
        var configuration = Projector.Configuration()
        configuration.batchSize = arguments[batch]
        configuration.readInterval = .milliseconds(arguments[readInterval])
        configuration.failpoints = Failpoints.fromEnvironment()
        try await DatabaseSetup.withPool(arguments, size: 2, logger: logger, requireTransactionIDsAhead: true) { pool in
            let projector = Projector(pool: pool, configuration: configuration, logger: logger,
                                      metrics: ProjectorMetrics(registry: MetricsRegistry()))
            try await ServiceGroup(services: [("projector", projector)], logger: logger).run()
        }
    }
}

/// `engage projections rebuild [NAME]`.
enum ProjectionsCommand {
    static let name = Argument("name", help: "The read model: engagement (the default and only one).", optional: true,
                               choices: [EngagementStore.projectionName])
    static let discardPruned = Flag(
        "discard-pruned", help: "Rebuild from the events kept after engage log prune: the pruned days' notifications leave the read model.")

    static let definition = Command(
        name: "projections",
        abstract: "Maintain read models folded from the event log.",
        subcommands: [
            Command(name: "rebuild", abstract: "Replay the whole log into a fresh copy of a read model and swap it in atomically.",
                    options: CommonOptions.databaseAndLogging, flags: [discardPruned], arguments: [name], run: rebuild),
        ])

    static func rebuild(_ arguments: ParsedArguments) async throws {
        let name = arguments[Self.name] ?? EngagementStore.projectionName
        guard name == EngagementStore.projectionName else {
            throw arguments.usageError(.invalidValue, "unknown read model '\(name)'; the read models are: engagement")
        }
        let progress = ProgressLine.standardError("rebuild \(name)")
        let logger = CommonOptions.logger(arguments)
        try await DatabaseSetup.withPool(arguments, size: 2, logger: logger) { pool in
            let stopwatch = Stopwatch()
            let rebuild = EngagementRebuild(pool: pool, prunedDays: arguments[discardPruned] ? .discard : .refuse, logger: logger)
            let replayed = try await rebuild.run { step in
                progress.update(step.events, of: step.total, "events")
            }
            progress.finish()
            print("rebuilt \(name) from \(replayed) events in \(stopwatch.millisecondsText) ms")
        }
    }
}
