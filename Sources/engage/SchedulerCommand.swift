import EventStore
import Experiments
import Projections
import Runtime

/// `engage scheduler`: the experiment scheduler alone.
enum SchedulerCommand {
    private static let defaults = Scheduler.Configuration()
    static let poll = Option("poll", value: "seconds", help: "Seconds between looks for due analysis runs.", environment: "ENGAGE_SCHEDULER_POLL",
                             default: Int(defaults.pollInterval.components.seconds), validate: .range(1...3_600))
    static let lease = Option(
        "lease", value: "seconds",
        help: "Seconds a claimed run stays reserved without renewal (renewed every third of it while it runs); how soon another scheduler retries a crashed one.",
        environment: "ENGAGE_SCHEDULER_LEASE", default: Int(defaults.leaseDuration.components.seconds), validate: .range(3...86_400))

    static let analysisSilence = Option(
        "analysis-silence", value: "seconds",
        help: "Seconds one statement of an analysis may go without an answer from the database before the run's attempt fails (a host that froze); a statement running longer than this is cut off too.",
        environment: "ENGAGE_ANALYSIS_SILENCE", default: Int(defaults.analysisSilenceLimit.components.seconds), validate: .range(10...86_400))

    static let incrementalLooks = Flag(
        "incremental-looks",
        help: "Analyse with each experiment's incremental tallies, reading only the events since its last look (on the primary), instead of replaying it whole.")

    static let definition = Command(
        name: "scheduler",
        abstract: "Run only the experiment analysis scheduler, until SIGTERM or SIGINT.",
        options: CommonOptions.databaseAndLogging + ReadOptions.all + [poll, lease, analysisSilence],
        flags: [incrementalLooks],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.logger(arguments)
        var configuration = Scheduler.Configuration()
        configuration.pollInterval = .seconds(arguments[poll])
        configuration.leaseDuration = .seconds(arguments[lease])
        configuration.incrementalLooks = arguments[incrementalLooks]
        configuration.analysisSilenceLimit = .seconds(arguments[analysisSilence])
        let failpoints = Failpoints.fromEnvironment()
        configuration.failpoint = { try failpoints.hit($0) }
        // An analysis on the primary holds up to three connections at once (two replay lanes, or
        // the look's fold, beside CUPED's pre-period read); the fourth keeps the lease renewal
        // (and the log partitions' upkeep) from waiting for them.
        try await DatabaseSetup.withPool(arguments, size: 4, logger: logger, requireTransactionIDsAhead: true) { pool in
            try await ReadOptions.withReads(arguments, primary: pool, size: 2, logger: logger) { reads in
                let scheduler = Scheduler(pool: pool, reads: reads, configuration: configuration, logger: logger)
                // The scheduler appends its decisions to the log: it keeps the log's partitions made too.
                try await ServiceGroup(services: [("log-partitions", EventPartitionMaintenance(pool: pool, logger: logger)),
                                                  ("scheduler", scheduler)], logger: logger).run()
            }
        }
    }
}
