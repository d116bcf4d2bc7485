import Dispatch
import EngageCore
import EventStore
import Experiments
import Foundation
import LogRetention
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

/// A scheduled incremental look that runs while `engage log prune --include-running-experiments`
/// or `engage log restore` is between its commits and the reset of the tallies: the log changed
/// under the look's checkpoint (events gone that the tallies count, events back below it), so
/// its fold is not the log's. It must store no analysis of that fold; the look after the reset
/// equals a full replay.
@Suite("Experiment looks during a prune or a restore")
struct LookDuringRewriteTests {
    /// Holds a prune or a restore inside its progress callback (on its connection's own thread)
    /// until the test lets it go on.
    final class Gate: Sendable {
        private let held = Mutex(false)
        private let release = DispatchSemaphore(value: 0)

        var isHeld: Bool { held.withLock { $0 } }

        /// Blocks the calling thread once, the first time `condition` holds.
        func hold(when condition: () -> Bool) {
            guard !held.withLock({ $0 }), condition() else { return }
            held.withLock { $0 = true }
            _ = release.wait(timeout: .now() + 120)
        }

        func open() { release.signal() }
    }

    /// The log, an experiment over all of it, and a scheduler that analyses it by incremental
    /// looks (manual runs: `engage experiment run`, the path scheduled runs take too).
    struct Setup: Sendable {
        let fixtures: RetentionFixtures
        /// The prune's and the restore's own pool, so that a held one takes none of the others'.
        let retention: RetentionFixtures
        let scheduler: Scheduler
        let metrics: SchedulerMetrics
        let logs: MemoryLogSink
        let clock: ManualTime
        let definition: ExperimentDefinition
        let runner: ExperimentRunner
        let database: PostgresConfiguration

        static let oldNotifications = 50

        init(failpoint: @escaping @Sendable (String) async throws -> Void = { _ in }) async throws {
            database = try TestPostgres.freshDatabase()
            fixtures = try RetentionFixtures(database)
            retention = try RetentionFixtures(database)
            // Two old weeks (52 and 45 days ago), both before the cut of a prune of 31 days, so
            // that a prune can be held with one week gone and the other still in the log.
            try await fixtures.seed(RetentionFixtures.events(notifications: 30, tag: "d52"), daysAgo: 52)
            try await fixtures.seed(RetentionFixtures.events(notifications: 20, tag: "d45"), daysAgo: 45)
            try await fixtures.seed(RetentionFixtures.events(notifications: 12, tag: "d5"), daysAgo: 5)
            try await fixtures.seed(RetentionFixtures.events(notifications: 6, tag: "now"), daysAgo: 0)
            try await fixtures.putEveryEventInTheExperiment()
            clock = ManualTime(wallClock: Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000)))
            let store = ExperimentStore(pool: fixtures.pool, time: clock)
            _ = try await store.create(ExperimentDefinition(
                id: "exp", appID: "app-1",
                arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                       ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.5)],
                primaryMetric: .open))
            definition = try await store.start("exp", now: clock.wallClock).definition
            var configuration = Scheduler.Configuration()
            configuration.incrementalLooks = true
            configuration.ownerID = "look-during-rewrite"
            configuration.failpoint = failpoint
            logs = MemoryLogSink()
            metrics = SchedulerMetrics(registry: MetricsRegistry())
            scheduler = Scheduler(pool: ConnectionPool(configuration: database, size: 4), configuration: configuration, time: clock,
                                  logger: Logger(label: "test", sink: logs), metrics: metrics)
            runner = ExperimentRunner(pool: fixtures.pool, chunkSize: 7, lanes: 1)
        }

        /// The experiment's events of the two old weeks still in the log (2 per notification).
        func oldEventsInTheLog() throws -> Int {
            let connection = try Connection(configuration: database)
            defer { connection.close() }
            return try connection.query("""
                SELECT count(*) FROM events WHERE notification_id LIKE 'd52-%' OR notification_id LIKE 'd45-%'
                """)[0].decode(0, as: Int.self)
        }

        /// A manual run of the experiment, once every earlier transaction has ended (a look folds
        /// below the oldest running one, cluster-wide).
        @discardableResult
        func look() async throws -> ExperimentRun {
            try await TestPostgres.waitForEarlierTransactions(fixtures.pool)
            // A manual run is keyed by its time, as a scheduled one.
            clock.advance(by: .seconds(1))
            return try await scheduler.runNow(experimentID: "exp")
        }

        /// Every run stored after `runID`, each against a full replay of the log as it is now: the
        /// stored analysis (without `read_from`) equal to the replay's, and both's notifications.
        func storedRunsAgainstTheReplay(after runID: Int64) async throws -> [(run: Int64, equal: Bool, stored: Int, replayed: Int)] {
            let runs = try await fixtures.pool.withConnection { connection in
                try connection.query("""
                    SELECT id, (result->>'look')::int, result->>'analyzed_at' FROM experiment_runs
                    WHERE experiment_id = 'exp' AND status = 'done' AND id > \(runID) ORDER BY id
                    """).rows.map { (try $0.decode(0, as: Int64.self), try $0.decode(1, as: Int.self), try $0.decode(2, as: String.self)) }
            }
            var compared: [(run: Int64, equal: Bool, stored: Int, replayed: Int)] = []
            for (id, look, analysedAt) in runs {
                let now = try #require(Timestamp(rfc3339: analysedAt))
                let replay = try await runner.analyse(definition, previousRuns: look - 1, now: now)
                let json = PostgresJSONB(replay.result.canonicalJSON)
                let row = try await fixtures.pool.withConnection { connection in
                    try connection.query("""
                        SELECT (result - 'read_from') = \(json),
                               (SELECT sum((arm->'counts'->>'notifications')::int) FROM jsonb_array_elements(result->'arms') arm)::int8
                        FROM experiment_runs WHERE id = \(id)
                        """)[0]
                }
                compared.append((id, try row.decode(0, as: Bool.self), try row.decode(1, as: Int.self), replay.notifications))
            }
            return compared
        }

        /// The newest run's id (0 before any).
        func lastRunID() async throws -> Int64 {
            try await fixtures.pool.withConnection { connection in
                try connection.query("SELECT coalesce(max(id), 0)::int8 FROM experiment_runs")[0].decode(0, as: Int64.self)
            }
        }

        /// `engage log prune --older-than 31d --include-running-experiments --archive DIR` as the
        /// command runs it: the tallies dropped as the prune's rewrite of the log ends.
        func prune(archive: String, progress: @escaping @Sendable (LogPruner.Progress) -> Void = { _ in }) async throws -> LogPruner.Report {
            try await retention.pruner(olderThan: 31, archive: archive, resetReaders: ExperimentTallyStore.resetEveryExperiment).run(progress: progress)
        }

        /// `engage log restore DIR` as the command runs it.
        func restore(_ directory: String, progress: @escaping @Sendable (LogPruner.Progress) -> Void = { _ in }) async throws -> LogRestorer.Report {
            try await retention.restorer(directory, resetReaders: ExperimentTallyStore.resetEveryExperiment).run(progress: progress)
        }

        /// The run was given back during the command, with the reason said once in the log.
        func expectDeferred(_ run: ExperimentRun, _ command: String, deferrals: Int) {
            #expect(run.status == .pending && run.attempts == 0, "\(run)")
            #expect(run.error?.hasPrefix("engage log \(command) is under way") == true, "\(run.error ?? "-")")
            #expect(metrics.deferred.value == deferrals)
            let lines = logs.lines.filter { $0.contains("scheduler.run.deferred") }
            #expect(lines.count == deferrals && lines.allSatisfy { $0.contains("log_rewrite_under_way") }, "\(lines)")
        }

        func close() async {
            await scheduler.pool.close()
            await retention.pool.close()
            await fixtures.pool.close()
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func aLookBetweenAPrunesCommitsAndItsResetStoresNoAnalysisOfTheChangedLog() async throws {
        let setup = try await Setup()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await setup.look()
        #expect(try await setup.storedRunsAgainstTheReplay(after: 0).map(\.equal) == [true])

        // Held once the first old week has left the log and the second has not.
        let gate = Gate()
        let pruning = Task {
            try await setup.prune(archive: directory) { _ in
                gate.hold { (try? setup.oldEventsInTheLog()).map { $0 > 0 && $0 < 2 * Setup.oldNotifications } ?? false }
            }
        }
        try await pollUntil(every: .milliseconds(10)) { gate.isHeld }
        let beforeHeldLook = try await setup.lastRunID()
        let held = try await setup.look()
        for stored in try await setup.storedRunsAgainstTheReplay(after: beforeHeldLook) {
            #expect(stored.equal, "run \(stored.run), stored during the prune, counts \(stored.stored) notifications; the log holds \(stored.replayed)")
        }
        setup.expectDeferred(held, "prune", deferrals: 1)
        gate.open()
        let report = try await pruning.value
        #expect(report.events == 2 * Setup.oldNotifications)
        #expect(report.readersReset == 1)

        // Once the prune is done: whatever was held back, and a new look, equal the replay.
        _ = try await setup.scheduler.tick()
        try await setup.look()
        let after = try await setup.storedRunsAgainstTheReplay(after: beforeHeldLook)
        // The held run, stored by the next poll after the reset, and the new one.
        #expect(after.count == 2 && after.allSatisfy(\.equal), "\(after)")
        #expect(after.first?.run == held.id)
        #expect(after.last?.replayed == 18)
        await setup.close()
    }

    @Test(.timeLimit(.minutes(5)))
    func aLookBetweenARestoresCommitsAndItsResetStoresNoAnalysisOfTheChangedLog() async throws {
        let setup = try await Setup()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await setup.look()
        let beforePrune = try await setup.lastRunID()
        #expect(try await setup.prune(archive: directory).events == 2 * Setup.oldNotifications)
        // The first look after the prune's reset folds the log as it is, and is its replay.
        try await setup.look()
        #expect(try await setup.storedRunsAgainstTheReplay(after: beforePrune).map(\.equal) == [true])

        // Held once its first batch of events is back in the log, below the tallies' checkpoint.
        let gate = Gate()
        let restoring = Task {
            try await setup.restore(directory) { progress in gate.hold { progress.events > 0 } }
        }
        try await pollUntil(every: .milliseconds(10)) { gate.isHeld }
        let beforeHeldLook = try await setup.lastRunID()
        let held = try await setup.look()
        for stored in try await setup.storedRunsAgainstTheReplay(after: beforeHeldLook) {
            #expect(stored.equal, "run \(stored.run), stored during the restore, counts \(stored.stored) notifications; the log holds \(stored.replayed)")
        }
        setup.expectDeferred(held, "restore", deferrals: 1)
        gate.open()
        #expect(try await restoring.value.restored == 2 * Setup.oldNotifications)

        _ = try await setup.scheduler.tick()
        try await setup.look()
        let after = try await setup.storedRunsAgainstTheReplay(after: beforeHeldLook)
        #expect(after.count == 2 && after.allSatisfy(\.equal), "\(after)")
        #expect(after.first?.run == held.id)
        #expect(after.last?.replayed == 68)
        await setup.close()
    }
    /// A look that folded before a prune began and stores after the prune's reset: the log
    /// changed between its fold and its store (the marker's generation moved on), so it stores
    /// nothing; the next poll's look folds from the start.
    @Test(.timeLimit(.minutes(5)))
    func aLookFoldedBeforeAPruneStoresNothingAfterIt() async throws {
        let holding = Mutex(true), reached = Mutex(false), released = Mutex(false)
        let setup = try await Setup { point in
            guard point == "scheduler.before-finish", holding.withLock({ $0 }) else { return }
            holding.withLock { $0 = false }
            reached.withLock { $0 = true }
            try await pollUntil(every: .milliseconds(10)) { released.withLock { $0 } }
        }
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        async let looking = setup.look()
        try await pollUntil(every: .milliseconds(10)) { reached.withLock { $0 } }
        #expect(try await setup.prune(archive: directory).readersReset == 1)
        released.withLock { $0 = true }
        let held = try await looking
        #expect(held.status == .pending && held.attempts == 0, "\(held)")
        #expect(setup.metrics.deferred.value == 1)
        #expect(setup.logs.lines.contains { $0.contains("scheduler.run.deferred") && $0.contains("log_rewritten_during_look") })
        #expect(try await setup.storedRunsAgainstTheReplay(after: 0).isEmpty)

        _ = try await setup.scheduler.tick()
        let after = try await setup.storedRunsAgainstTheReplay(after: 0)
        #expect(after.map(\.run) == [held.id] && after.allSatisfy(\.equal), "\(after)")
        #expect(after.first?.replayed == 18)
        await setup.close()
    }
}
