import EngageCore
import Experiments
import Foundation
import LogRetention
import Postgres
import Testing
import TestSupport

/// Incremental experiment tallies after the log loses events (prune) or gets them back with their
/// old transaction ids (restore): neither is seen by the tallies' checkpoint, so `engage log prune`
/// and `engage log restore` drop them (`ExperimentTallyStore.reset`) and the next look equals a
/// full replay of the log as it is.
@Suite("Experiment looks after a prune or a restore")
struct PrunedExperimentLookTests {
    @Test func aLookAfterAPruneOrARestoreAndTheResetEqualsTheFullReplay() async throws {
        let fixtures = try RetentionFixtures()
        // 45 days ago: wholly before the cut of a prune of 31 days; 5 days ago and now: kept.
        try await fixtures.seed(RetentionFixtures.events(notifications: 40, tag: "d45"), daysAgo: 45)
        try await fixtures.seed(RetentionFixtures.events(notifications: 12, tag: "d5"), daysAgo: 5)
        try await fixtures.seed(RetentionFixtures.events(notifications: 6, tag: "now"), daysAgo: 0)
        try await fixtures.putEveryEventInTheExperiment()
        let definition = ExperimentDefinition(
            id: "exp", appID: "app-1",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.5)],
            primaryMetric: .open)
        let runner = ExperimentRunner(pool: fixtures.pool, chunkSize: 7, lanes: 1)
        let now = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))

        /// The look's tallies and counts against a full replay's.
        func lookEqualsReplay() async throws -> Bool {
            try await TestPostgres.waitForEarlierTransactions(fixtures.pool)
            let look = try await runner.look(definition, previousRuns: 0, now: now)
            let replay = try await runner.analyse(definition, previousRuns: 0, now: now)
            return look.tallies == replay.tallies && look.events == replay.events && look.notifications == replay.notifications
        }

        #expect(try await lookEqualsReplay())
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pruned = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        #expect(pruned.events == 80)

        // The stored tallies still count the pruned notifications; the replay does not.
        #expect(try await !lookEqualsReplay())
        #expect(try await ExperimentTallyStore.reset(pool: fixtures.pool) == 1)
        #expect(try await lookEqualsReplay())
        try await TestPostgres.waitForEarlierTransactions(fixtures.pool)
        #expect(try await runner.look(definition, previousRuns: 0, now: now).notifications == 18)

        // Restored with their old transaction ids, below the checkpoint: the tallies miss them.
        let restored = try await fixtures.restorer(directory).run()
        #expect(restored.restored == 80)
        #expect(try await !lookEqualsReplay())
        #expect(try await ExperimentTallyStore.reset(experimentID: "exp", pool: fixtures.pool) == 1)
        #expect(try await lookEqualsReplay())
        try await TestPostgres.waitForEarlierTransactions(fixtures.pool)
        #expect(try await runner.look(definition, previousRuns: 0, now: now).notifications == 58)

        // Nothing stored: nothing to drop.
        #expect(try await ExperimentTallyStore.reset(experimentID: "other", pool: fixtures.pool) == 0)
        await fixtures.pool.close()
    }
}
