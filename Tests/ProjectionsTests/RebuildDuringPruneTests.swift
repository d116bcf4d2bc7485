import Dispatch
import EngageCore
@testable import EventStore
import Foundation
import LogRetention
import Postgres
@testable import Projections
import Runtime
import Synchronization
import Testing
import TestSupport

/// `engage projections rebuild` (without --discard-pruned) started while `engage log prune` runs:
/// the prune checked the read models before the rebuild existed, and the rebuild checked the
/// pruned days before the prune recorded any. The rebuild must then refuse (the log lost days it
/// has not replayed) or count those days; it must never swap in a model without them.
@Suite("Rebuild during a prune")
struct RebuildDuringPruneTests {
    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    /// Runs a task's code on a thread of its own, which a test may block (a semaphore's wait)
    /// without taking a thread from the pool every other test's tasks run on.
    final class BlockableExecutor: TaskExecutor, @unchecked Sendable {
        private let queue = DispatchQueue(label: "rebuild-during-prune")

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    /// 60 notifications recorded 45 days ago (a prune takes them) and 20 three days ago, folded
    /// by a rebuild: the old events, and the live read model that counts them all.
    static func oldAndRecentDaysFolded(_ pool: ConnectionPool, seed: UInt64) async throws -> (old: [AppendItem], model: [String]) {
        let store = EventStore(pool: pool)
        let old = ProjectionFixtures.events(notifications: 60, seed: seed)
        let recent = ProjectionFixtures.events(notifications: 20, seed: seed + 1)
        _ = try await store.append(old)
        try await RecordedInThePast.move(old.map(\.event.eventID), daysAgo: 45, pool: pool)
        _ = try await store.append(recent)
        try await RecordedInThePast.move(recent.map(\.event.eventID), daysAgo: 3, pool: pool)
        try await TestPostgres.waitForEarlierTransactions(pool)
        try await EngagementRebuild(pool: pool).run()
        return (old, try await ReadModelSnapshot.rows(pool))
    }

    @Test(.timeLimit(.minutes(5)))
    func aRebuildStartedDuringAPruneNeverDropsThePrunedDays() async throws {
        let configuration = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: configuration, size: 2)
        let prunePool = ConnectionPool(configuration: configuration, size: 2)
        let rebuildPool = ConnectionPool(configuration: configuration, size: 2)
        let (old, everything) = try await Self.oldAndRecentDaysFolded(pool, seed: 51)
        #expect(!everything.isEmpty)

        let checked = Flag()
        let rebuildStarted = DispatchSemaphore(value: 0), pruneDone = DispatchSemaphore(value: 0)
        // The prune's own checks pass (no rebuild yet); then it waits, on its connection's thread,
        // until a rebuild has started (checked the pruned days: none yet) and replayed a batch.
        let projections: LogPruner.Check = { connection, cut in
            try ProjectionRetention.behind(recordedBefore: cut, on: connection).map { "behind: \($0.projection)" }
        }
        let rebuildStarts: LogPruner.Check = { _, _ in
            checked.set()
            _ = rebuildStarted.wait(timeout: .now() + 120)
            return []
        }
        var pruneConfiguration = LogPruner.Configuration(olderThan: .seconds(31 * 86_400), window: IdempotencyWindow())
        pruneConfiguration.checks = [projections, rebuildStarts]
        pruneConfiguration.batchRows = 50
        let pruner = LogPruner(pool: prunePool, configuration: pruneConfiguration, logger: Logger(label: "test", sink: MemoryLogSink()))
        let pruning = Task { try await pruner.run() }
        try await pollUntil(every: .milliseconds(20)) { checked.isSet }

        let firstBatch = Flag()
        // The progress callback blocks its thread while the prune runs: not one of the few threads
        // of Swift's shared pool, which every other test of the process needs.
        let executor = BlockableExecutor()
        let rebuilding = Task(executorPreference: executor) {
            try await EngagementRebuild(pool: rebuildPool, batchSize: 10).run { _ in
                guard !firstBatch.isSet else { return }
                firstBatch.set()
                rebuildStarted.signal()
                // The prune removes the old days while the rebuild is between its batches.
                _ = pruneDone.wait(timeout: .now() + 120)
            }
        }
        let report = try await pruning.value
        pruneDone.signal()
        #expect(report.events == old.count)
        let outcome = await rebuilding.result
        if case .failure(let error) = outcome {
            // Refusing is right; the live model must still be the one that counts the old days.
            #expect(error is EngagementRebuild.PrunedLogError, "\(error)")
        }
        let after = try await ReadModelSnapshot.rows(pool)
        let lost = Set(everything).subtracting(after), gained = Set(after).subtracting(everything)
        #expect(lost.isEmpty && gained.isEmpty,
                "the rebuild swapped in a model without the pruned days: \(lost.count) rows lost, \(gained.count) new; e.g. \(lost.sorted().prefix(2))")
        await pool.close()
        await prunePool.close()
        await rebuildPool.close()
    }

    /// `engage projections rebuild --discard-pruned` while `engage log restore` brings the pruned
    /// days back: the restored events land behind the rebuild's position, so the rebuild never
    /// folds them, and the days are restored, so it would not mark them as left out either. It
    /// must refuse to swap; the live model, which counts them, stays.
    @Test(.timeLimit(.minutes(5)))
    func aRebuildThatDiscardsPrunedDaysRefusesWhenARestoreRanMeanwhile() async throws {
        let configuration = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: configuration, size: 2)
        let rebuildPool = ConnectionPool(configuration: configuration, size: 2)
        let (old, everything) = try await Self.oldAndRecentDaysFolded(pool, seed: 53)

        let archive = NSTemporaryDirectory() + "engage-rebuild-restore-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: archive, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: archive) }
        let pruner = PruneUnderProjectorTests.pruner(pool, archive: archive, checks: [PruneUnderProjectorTests.projections])
        #expect(try await pruner.run().events == old.count)
        let prunedDays = try await pool.withConnection { try PrunedDays.all(on: $0).map(\.day) }
        #expect(!prunedDays.isEmpty)
        #expect(try await ReadModelSnapshot.rows(pool) == everything)

        let firstBatch = Flag()
        let restored = DispatchSemaphore(value: 0)
        let executor = BlockableExecutor()
        let rebuilding = Task(executorPreference: executor) {
            try await EngagementRebuild(pool: rebuildPool, batchSize: 10, prunedDays: .discard).run { _ in
                guard !firstBatch.isSet else { return }
                firstBatch.set()
                _ = restored.wait(timeout: .now() + 120)
            }
        }
        try await pollUntil(every: .milliseconds(20)) { firstBatch.isSet }
        let restore = try await LogRestorer(pool: pool, directory: archive, logger: Logger(label: "test", sink: MemoryLogSink())).run()
        restored.signal()
        #expect(restore.restored == old.count)
        #expect(restore.days.allSatisfy { !$0.rebuiltWithout })

        let outcome = await rebuilding.result
        guard case .failure(let error) = outcome else {
            Issue.record("the rebuild swapped in a model without the restored days")
            await pool.close()
            await rebuildPool.close()
            return
        }
        #expect((error as? EngagementRebuild.PrunedDaysChangedError)?.days == prunedDays, "\(error)")
        #expect(try await ReadModelSnapshot.rows(pool) == everything)
        // Run again, it rebuilds the whole log, the restored days included.
        try await EngagementRebuild(pool: pool).run()
        #expect(try await ReadModelSnapshot.rows(pool) == everything)
        await pool.close()
        await rebuildPool.close()
    }

    /// A rebuild clears the "rebuilt without" mark of the days restored before it began, which it
    /// folded; a day restored after its last reading of them (a restore racing its swap) lies
    /// behind its position, unfolded, and keeps the mark, so a later restore still asks for a
    /// rebuild. Clearing every restored day's mark at the swap cleared that one too.
    @Test func aRebuildClearsTheMarkOnlyOfDaysRestoredBeforeItBegan() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let (first, second) = (Timestamp(microsecondsSinceEpoch: 20_000 * 86_400_000_000),
                               Timestamp(microsecondsSinceEpoch: 20_001 * 86_400_000_000))
        let marks = try await pool.withConnection { connection -> [Timestamp: Bool] in
            for day in [first, second] { try PrunedDays.record(day: day, events: 5, archiveFile: nil, archiveSHA256: nil, on: connection) }
            try PrunedDays.markRebuiltWithout(on: connection)
            try PrunedDays.markRestored(day: first, archiveSHA256: "", eventsInLog: 5, on: connection)
            let atStart = try PrunedDays.all(on: connection)
            // Restored while the rebuild swaps in its model.
            try PrunedDays.markRestored(day: second, archiveSHA256: "", eventsInLog: 5, on: connection)
            try PrunedDays.markRebuiltWith(atStart, on: connection)
            return Dictionary(uniqueKeysWithValues: try PrunedDays.all(on: connection).map { ($0.day, $0.rebuiltWithoutAt != nil) })
        }
        #expect(marks == [first: false, second: true])
        await pool.close()
    }

    /// What counts as a change of the pruned days between the rebuild's two readings: a new
    /// day, a day restored, a day pruned and restored (its times moved even though it is not
    /// missing at either reading); not a day a rebuild marked as left out.
    @Test func theSwapSeesEveryPruneAndRestoreSinceTheStart() {
        func day(_ number: Int64, pruned: Int64, restored: Int64? = nil, rebuiltWithout: Int64? = nil) -> PrunedDays.Day {
            let second: (Int64) -> Timestamp = { Timestamp(microsecondsSinceEpoch: $0 * 1_000_000) }
            return PrunedDays.Day(day: second(number * 86_400), events: 10, prunedAt: second(pruned), archiveFile: nil,
                                  archiveSHA256: nil, restoredAt: restored.map(second), rebuiltWithoutAt: rebuiltWithout.map(second))
        }
        let start = [day(1, pruned: 100), day(2, pruned: 100, restored: 200)]
        #expect(EngagementRebuild.changedDays(from: start, to: start).isEmpty)
        #expect(EngagementRebuild.changedDays(from: start, to: [day(1, pruned: 100, rebuiltWithout: 300), start[1]]).isEmpty)
        #expect(EngagementRebuild.changedDays(from: start, to: start + [day(3, pruned: 300)]) == [day(3, pruned: 0).day])
        #expect(EngagementRebuild.changedDays(from: start, to: [day(1, pruned: 100, restored: 300), start[1]]) == [start[0].day])
        // Pruned again and restored again while the rebuild ran: missing at neither reading.
        #expect(EngagementRebuild.changedDays(from: start, to: [start[0], day(2, pruned: 250, restored: 300)]) == [start[1].day])
    }
}
