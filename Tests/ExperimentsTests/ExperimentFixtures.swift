import EngageCore
@testable import Experiments
import Foundation
import Postgres
import Runtime
import Synchronization
import TestSupport

extension ManualTime {
    /// Moves both clocks on by whole seconds.
    func advance(seconds: Int64) { advance(by: .seconds(seconds)) }
}

enum Fixtures {
    static func time(_ text: String) -> Timestamp { Timestamp(rfc3339: text)! }

    static func definition(id: String = "strategy-full-vs-adaptive", app: String = "app-1",
                           schedule: String = "* * * * *") throws -> ExperimentDefinition {
        ExperimentDefinition(
            id: id, appID: app,
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)],
            primaryMetric: .open, guardrails: [ExperimentGuardrail(.dismiss)], schedule: try CronSchedule(schedule))
    }

    static let logger = Logger(label: "test", level: .debug, sink: MemoryLogSink())

    static func scheduler(_ database: PostgresConfiguration, clock: ManualTime, owner: String,
                          configure: (inout Scheduler.Configuration) -> Void = { _ in }) -> Scheduler {
        var configuration = Scheduler.Configuration()
        configuration.ownerID = owner
        configure(&configuration)
        return Scheduler(pool: ConnectionPool(configuration: database, size: 2), configuration: configuration, time: clock,
                         logger: logger)
    }

    static func count(_ pool: ConnectionPool, _ sql: SQL) async throws -> Int {
        try await pool.withConnection { try $0.query(sql)[0].decode(0, as: Int.self) }
    }
}
