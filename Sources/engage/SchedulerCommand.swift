import Experiments
import Foundation
import Postgres
import Projections
import Runtime

/// `engage scheduler`: the experiment scheduler alone.
enum SchedulerCommand: EngageCommand {
    static let definition = Command(
        name: "scheduler",
        abstract: "Run only the experiment analysis scheduler, until SIGTERM or SIGINT.",
        options: CommonOptions.database + CommonOptions.logging + [
            .init("poll", value: "seconds", help: "Seconds between looks for due analysis runs.", environment: "ENGAGE_SCHEDULER_POLL", default: "5"),
            .init("lease", value: "seconds", help: "Seconds a claimed run stays reserved without renewal (renewed every third of it while it runs); how soon another scheduler retries a crashed one.",
                  environment: "ENGAGE_SCHEDULER_LEASE", default: "60"),
        ])

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = try CommonOptions.logger(arguments)
        let configuration = try SchedulerOptions.configuration(arguments)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        let pool = ConnectionPool(configuration: setup.configuration, size: 2)
        let scheduler = Scheduler(pool: pool, configuration: configuration, logger: logger)
        try await ServiceGroup(services: [("scheduler", scheduler)], logger: logger).run()
        await pool.close()
    }
}

enum SchedulerOptions {
    static func configuration(_ arguments: ParsedArguments) throws -> Scheduler.Configuration {
        var configuration = Scheduler.Configuration()
        configuration.pollInterval = .seconds(try arguments.int("poll", default: 5, in: 1...3_600))
        configuration.leaseDuration = .seconds(try arguments.int("lease", default: 60, in: 3...86_400))
        let failpoints = Failpoints.fromEnvironment()
        configuration.failpoint = { try failpoints.hit($0) }
        return configuration
    }
}
