import EngageCore
import EventStore
import Experiments
import Foundation
import LogRetention
import Postgres
import Projections
import Runtime
import Testing
import TestSupport

/// `engage log prune` while the projector and the scheduler run: they carry on from the oldest
/// event kept, the live read model loses nothing, and a rebuild after the prune is what the kept
/// events fold to (until the archive is restored).
@Suite("Pruning under the projector and the scheduler")
struct PruneUnderProjectorTests {
    static let experimentID = "prune-exp"

    /// The fixtures' events, tagged with the experiment (arm by notification).
    static func tagged(_ items: [AppendItem]) -> [AppendItem] {
        items.map { item in
            var item = item
            let arm = item.event.notificationID.hash % 2 == 0 ? "control" : "treatment"
            item.event.experiment = ExperimentTag(id: experimentID, arm: arm, probability: 0.5)
            return item
        }
    }

    /// The read model a rebuild folds from exactly these events, in a database of their own.
    /// A rebuild folds the events below the cluster-wide horizon: while other tests run, one of
    /// their open transactions can keep these appends out of it, and no projector here would
    /// fold the rest, so the rebuild waits for the transactions that began before it.
    static func modelOf(_ items: [AppendItem]) async throws -> [String] {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        defer { Task { await pool.close() } }
        for chunk in stride(from: 0, to: items.count, by: 200).map({ Array(items[$0..<min($0 + 200, items.count)]) }) {
            _ = try await EventStore(pool: pool).append(chunk)
        }
        try await TestPostgres.waitForEarlierTransactions(pool)
        try await EngagementRebuild(pool: pool).run()
        return try await ReadModelSnapshot.rows(pool)
    }

    static func pruner(_ pool: ConnectionPool, archive: String?, checks: [LogPruner.Check]) -> LogPruner {
        var configuration = LogPruner.Configuration(olderThan: .seconds(31 * 86_400), window: IdempotencyWindow(), archiveDirectory: archive)
        configuration.checks = checks
        configuration.batchRows = 50
        return LogPruner(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
    }

    static let projections: LogPruner.Check = { connection, cut in
        try ProjectionRetention.behind(recordedBefore: cut, on: connection).map { "behind: \($0.projection)" }
    }
    static let experiments: LogPruner.Check = { connection, cut in
        try ExperimentRetention.runningExperiments(withEventsRecordedBefore: cut, on: connection).map { "running: \($0)" }
    }

    @Test(.timeLimit(.minutes(5)))
    func theProjectorAndTheAnalysesCarryOnFromTheOldestKeptEvent() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 8)
        let store = EventStore(pool: pool)
        let old = Self.tagged(ProjectionFixtures.events(notifications: 60, seed: 31))
        let kept = Self.tagged(ProjectionFixtures.events(notifications: 40, seed: 32))
        let later = Self.tagged(ProjectionFixtures.events(notifications: 30, seed: 33))
        _ = try await store.append(old)
        // Weeks of days 38 days ago or more lie wholly before the cut of a prune of 31 days.
        try await RecordedInThePast.move(old.prefix(old.count / 2).map(\.event.eventID), daysAgo: 45, pool: pool)
        try await RecordedInThePast.move(old.dropFirst(old.count / 2).map(\.event.eventID), daysAgo: 38, pool: pool)
        _ = try await store.append(kept)
        try await RecordedInThePast.move(kept.map(\.event.eventID), daysAgo: 3, pool: pool)

        let definition = ExperimentDefinition(
            id: Self.experimentID, appID: "app-1",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)],
            primaryMetric: .open, guardrails: [], schedule: try CronSchedule("* * * * *"))
        let experiments = ExperimentStore(pool: pool)
        _ = try await experiments.create(definition)
        _ = try await experiments.start(Self.experimentID)

        var projectorConfiguration = Projector.Configuration()
        projectorConfiguration.batchSize = 37
        projectorConfiguration.pollInterval = .milliseconds(100)
        let projector = Projector(pool: pool, configuration: projectorConfiguration, logger: Logger(label: "test", sink: MemoryLogSink()),
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()))
        var schedulerConfiguration = Scheduler.Configuration()
        schedulerConfiguration.pollInterval = .milliseconds(200)
        let scheduler = Scheduler(pool: pool, configuration: schedulerConfiguration, logger: Logger(label: "test", sink: MemoryLogSink()))
        let running = Task {
            try await ServiceGroup(services: [("projector", projector), ("scheduler", scheduler)],
                                   logger: Logger(label: "test", sink: MemoryLogSink())).run()
        }
        defer { running.cancel() }
        try await pollUntil(every: .milliseconds(50)) { try await ReadModelSnapshot.isCaughtUp(pool) }
        #expect(try await ReadModelSnapshot.rows(pool) == (try await Self.modelOf(old + kept)))

        // The running experiment has events in the old days: refused, nothing goes.
        let refused = await #expect(throws: LogRetentionError.self) {
            try await Self.pruner(pool, archive: nil, checks: [Self.projections, Self.experiments]).run()
        }
        #expect(refused == .refused(reasons: ["running: \(Self.experimentID)"]))
        #expect(try await pool.withConnection { try $0.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self) } > old.count + kept.count)

        // Pruned while events keep arriving.
        let directory = NSTemporaryDirectory() + "engage-prune-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let appending = Task {
            for chunk in stride(from: 0, to: later.count, by: 7).map({ Array(later[$0..<min($0 + 7, later.count)]) }) {
                _ = try await store.append(chunk)
            }
        }
        let report = try await Self.pruner(pool, archive: directory, checks: [Self.projections]).run()
        try await appending.value
        #expect(report.events == old.count)
        try await pollUntil(every: .milliseconds(50)) { try await ReadModelSnapshot.isCaughtUp(pool) }

        // The live model lost nothing: it still counts the pruned days' notifications.
        let everything = try await Self.modelOf(old + kept + later)
        #expect(try await ReadModelSnapshot.rows(pool) == everything)
        // The analysis replays what the log keeps.
        let outcome = try await ExperimentRunner(pool: pool).analyse(definition, previousRuns: 0, now: ProjectionFixtures.start)
        #expect(outcome.notifications == 40 + 30)
        #expect(outcome.events == kept.count + later.count)

        // A rebuild would drop the pruned days: refused, then done on request, then restored.
        let error = await #expect(throws: EngagementRebuild.PrunedLogError.self) { try await EngagementRebuild(pool: pool).run() }
        #expect(error?.description.contains("restore their archive first (engage log restore DIR)") == true)
        #expect(try await ReadModelSnapshot.rows(pool) == everything)
        try await EngagementRebuild(pool: pool, prunedDays: .discard).run()
        try await pollUntil(every: .milliseconds(50)) { try await ReadModelSnapshot.isCaughtUp(pool) }
        #expect(try await ReadModelSnapshot.rows(pool) == (try await Self.modelOf(kept + later)))

        let restored = try await LogRestorer(pool: pool, directory: directory, logger: Logger(label: "test", sink: MemoryLogSink())).run()
        #expect(restored.restored == old.count)
        #expect(restored.days.allSatisfy { $0.rebuiltWithout })
        #expect(restored.daysToRebuild.count == restored.days.count)
        // Behind the checkpoint: the live projector leaves the restored events to a rebuild.
        #expect(try await ReadModelSnapshot.rows(pool) == (try await Self.modelOf(kept + later)))
        // Run again (as after a restore cut short by a later day's failure): nothing comes back,
        // and the days still wait for a rebuild, which the command must go on saying.
        let restoredAgain = try await LogRestorer(pool: pool, directory: directory, logger: Logger(label: "test", sink: MemoryLogSink())).run()
        #expect(restoredAgain.restored == 0)
        #expect(restoredAgain.daysToRebuild.count == restored.days.count)
        try await EngagementRebuild(pool: pool).run()
        try await pollUntil(every: .milliseconds(50)) { try await ReadModelSnapshot.isCaughtUp(pool) }
        #expect(try await ReadModelSnapshot.rows(pool) == everything)
        // Counted again by that rebuild: a later restore asks for none.
        let afterRebuild = try await LogRestorer(pool: pool, directory: directory, logger: Logger(label: "test", sink: MemoryLogSink())).run()
        #expect(afterRebuild.restored == 0)
        #expect(afterRebuild.daysToRebuild.isEmpty)
        running.cancel()
        _ = try? await running.value
        await pool.close()
    }

    @Test func aReadModelThatHasNotFoldedTheOldDaysHoldsThePruneBack() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        defer { Task { await pool.close() } }
        let old = ProjectionFixtures.events(notifications: 5, seed: 41)
        _ = try await EventStore(pool: pool).append(old)
        try await RecordedInThePast.move(old.map(\.event.eventID), daysAgo: 45, pool: pool)
        // No projector ran: nothing to hold back, it will start from the oldest event kept.
        let cut = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))
        #expect(try await pool.withConnection { try ProjectionRetention.behind(recordedBefore: cut, on: $0) }.isEmpty)
        // A projector that stopped before the old days, and a rebuild's checkpoint.
        _ = try await pool.withConnection { connection in
            try connection.execute("INSERT INTO projection_checkpoints (projection) VALUES ('engagement'), ('engagement:rebuild')")
        }
        // No rebuild runs (its process died and left its checkpoint): only the projector holds
        // the prune back.
        #expect(try await pool.withConnection { try ProjectionRetention.behind(recordedBefore: cut, on: $0) }.map(\.projection)
                == ["engagement"])
        // A rebuild replaying holds its lock.
        let rebuildLock = try Connection(configuration: pool.configuration)
        defer { rebuildLock.close() }
        #expect(try rebuildLock.query("SELECT pg_try_advisory_lock(\(EngagementRebuild.lockKey))")[0].decode(0, as: Bool.self))
        let behind = try await pool.withConnection { try ProjectionRetention.behind(recordedBefore: cut, on: $0) }
        #expect(behind.map(\.projection) == ["engagement", "engagement:rebuild"])
        #expect(behind.map(\.isRebuild) == [false, true])
        let error = await #expect(throws: LogRetentionError.self) {
            try await Self.pruner(pool, archive: nil, checks: [Self.projections]).run()
        }
        #expect(error == .refused(reasons: ["behind: engagement", "behind: engagement:rebuild"]))
    }
}
