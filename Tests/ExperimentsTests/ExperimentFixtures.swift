import EngageCore
@testable import Experiments
import Foundation
import Postgres
import Runtime
import Synchronization
import TestSupport

/// A clock a test moves by hand.
final class TestClock: Sendable {
    private let value: Mutex<Timestamp>

    init(_ start: Timestamp) { value = Mutex(start) }

    var now: Timestamp { value.withLock { $0 } }

    func set(_ time: Timestamp) { value.withLock { $0 = time } }

    func advance(seconds: Int64) { value.withLock { $0 = $0.adding(microseconds: seconds * Timestamp.microsecondsPerSecond) } }
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

    static func scheduler(_ database: PostgresConfiguration, clock: TestClock, owner: String,
                          configure: (inout Scheduler.Configuration) -> Void = { _ in }) -> Scheduler {
        var configuration = Scheduler.Configuration()
        configuration.ownerID = owner
        configuration.clock = { clock.now }
        configure(&configuration)
        return Scheduler(pool: ConnectionPool(configuration: database, size: 2), configuration: configuration, logger: logger)
    }

    static func count(_ pool: ConnectionPool, _ sql: SQL) async throws -> Int {
        try await pool.withConnection { try $0.query(sql)[0].decode(0, as: Int.self) }
    }
}
