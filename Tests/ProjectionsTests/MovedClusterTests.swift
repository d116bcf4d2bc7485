import EngageCore
import EventStore
import Foundation
import Postgres
@testable import Projections
import Runtime
import Testing
import TestSupport

/// A database moved with pg_dump into a new cluster keeps its log's transaction ids, while the
/// new cluster's counter starts low: every event appended there sorts before the projector's
/// checkpoint (docs/reliability.md, "Transaction ids behind the log").
@Suite("A log moved into a new cluster")
struct MovedClusterTests {
    struct RunningProjector {
        let projector: Projector
        let metrics: ProjectorMetrics
        let log: MemoryLogSink
        let task: Task<Void, Error>

        init(_ pool: ConnectionPool) {
            var configuration = Projector.Configuration()
            configuration.pollInterval = .milliseconds(50)
            log = MemoryLogSink()
            metrics = ProjectorMetrics(registry: MetricsRegistry())
            let projector = Projector(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: log), metrics: metrics)
            self.projector = projector
            task = Task { try await projector.run() }
        }

        func stop() async {
            task.cancel()
            _ = try? await task.value
        }
    }

    func eventsProcessed(_ pool: ConnectionPool) async throws -> Int {
        try await pool.withConnection { try ProjectorLag.read(on: $0).eventsProcessed }
    }

    @Test(.timeLimit(.minutes(2)))
    func theProjectorSaysSoThenFoldsAgainOnceTheCounterHasANewEpoch() async throws {
        let move = try ClusterMove()
        defer { move.remove() }
        try move.burnTransactionIDs(3_000)
        let before = ProjectionFixtures.events(notifications: 20, seed: 71)
        let oldPool = ConnectionPool(configuration: move.old.configuration(), size: 3)
        _ = try await EventStore(pool: oldPool).append(before)
        let onOld = RunningProjector(oldPool)
        try await pollUntil(every: .milliseconds(20)) { try await ReadModelSnapshot.isCaughtUp(oldPool) }
        await onOld.stop()
        await oldPool.close()
        try move.dumpOldIntoNew()
        try move.old.stop()

        let pool = ConnectionPool(configuration: move.new.configuration(), size: 3)
        let whileBehind = ProjectionFixtures.events(notifications: 5, seed: 72)
        _ = try await EventStore(pool: pool).append(whileBehind)
        let checkpoint = try await pool.withConnection { try EngagementStore.checkpoint(EngagementStore.projectionName, on: $0) }
        #expect(try await eventsProcessed(pool) == before.count)

        // What the projector reads next: an exact error, where it used to read nothing, every time,
        // without a word (and the lag, counted below the snapshot's xmax, says 0 behind).
        let read = try await pool.withConnection { connection in
            Result { try EventStore.readFoldable(after: checkpoint, limit: 1_000, on: connection) }
        }
        let next = try await pool.withConnection { try TransactionCounter.next(on: $0) }
        #expect(throws: TransactionIDsBehindLog(holder: .checkpoint, held: checkpoint.transactionID, next: next)) { try read.get() }
        #expect(next < checkpoint.transactionID)

        // The projector running: says it once at error level, shows it on its gauge, folds nothing.
        let running = RunningProjector(pool)
        try await pollUntil(every: .milliseconds(20)) { running.metrics.transactionIDsBehind.value == 1 }
        let reported = running.log.lines.filter { $0.contains("projector.transaction-ids-behind-log") }
        #expect(reported.count == 1)
        #expect(reported.first?.contains("level=error") == true, "\(reported)")
        #expect(reported.first?.contains("checkpoint.transaction=\(checkpoint.transactionID)") == true, "\(reported)")
        // Another process takes the projector's lock (this one's session ended): as a standby it
        // folds nothing and finds nothing behind, whatever it found while it held the lock.
        let otherProjector = try Connection(configuration: move.new.configuration())
        try await pollUntil(every: .milliseconds(20)) {
            _ = try otherProjector.query("""
                SELECT pg_terminate_backend(pid, 5000) FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND objid = \(Projector.lockKey & 0xFFFF_FFFF) AND pid <> pg_backend_pid()
                """)
            return try otherProjector.query("SELECT pg_try_advisory_lock(\(Projector.lockKey))")[0].decode(0, as: Bool.self)
        }
        // (The time limit catches a gauge left at 1.)
        try await pollUntil(every: .milliseconds(20)) { running.metrics.transactionIDsBehind.value == 0 }
        #expect(running.metrics.active.value == 0)
        await running.stop()
        otherProjector.close()
        #expect(try await pool.withConnection { try EngagementStore.checkpoint(EngagementStore.projectionName, on: $0) } == checkpoint)
        #expect(try await eventsProcessed(pool) == before.count)

        // The repair: a new epoch, the 32-bit counter unchanged, on the stopped cluster.
        let repair = TransactionIDRepair(highest: checkpoint.transactionID, next: next)
        #expect(repair.isNeeded && repair.epoch == 1)
        await pool.close()
        try move.new.stop()
        try move.new.resetTransactionEpoch(repair.epoch)
        try move.new.start()

        let repaired = ConnectionPool(configuration: move.new.configuration(), size: 3)
        defer { Task { await repaired.close() } }
        let nextAfter = try await repaired.withConnection { try TransactionCounter.next(on: $0) }
        #expect(nextAfter >> 32 == 1 && nextAfter > checkpoint.transactionID)
        let afterRepair = ProjectionFixtures.events(notifications: 7, seed: 73)
        _ = try await EventStore(pool: repaired).append(afterRepair)
        let resumed = RunningProjector(repaired)
        try await pollUntil(every: .milliseconds(20)) { try await ReadModelSnapshot.isCaughtUp(repaired) }
        await resumed.stop()
        #expect(resumed.metrics.transactionIDsBehind.value == 0)
        // Events appended after the repair are folded; those appended while behind sort before the
        // checkpoint for good, and only a rebuild (which replays the whole log) takes them in.
        #expect(try await eventsProcessed(repaired) == before.count + afterRepair.count)
        let replayed = try await EngagementRebuild(pool: repaired, prunedDays: .refuse).run { _ in }
        #expect(replayed == before.count + whileBehind.count + afterRepair.count)
    }
}
