import EngageCore
import EventStore
import Postgres
@testable import Projections
import Testing
import TestSupport

/// The batcher with a state cache far smaller than the notifications it folds, against a real
/// PostgreSQL: new notifications skip the lookup (`NotificationKeyFilter`, filled from the table
/// first when it has states), late events of notifications the cache forgot read their stored
/// state, and the read model still equals a rebuild row for row, whether the batcher started on
/// an empty states table or not.
@Suite("Engagement batcher with a small state cache")
struct EngagementBatcherCacheTests {
    let pool: ConnectionPool
    let store: EventStore

    init() throws {
        pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 3)
        store = EventStore(pool: pool)
    }

    /// Folds everything in the log with one batcher that caches 40 states and scans a table with
    /// states 60 keys a batch; returns it. Other tests' transactions in the cluster can hold the
    /// readable head back a while: batches continue until the checkpoint reaches the last event
    /// stored.
    @discardableResult
    func catchUp(batchSize: Int) async throws -> EngagementBatcher {
        var batcher = try await pool.withConnection { connection in
            EngagementBatcher(tables: .live, checkpointName: EngagementStore.projectionName, batchSize: batchSize,
                              cacheLimit: 40, scanChunk: 60,
                              position: try EngagementStore.checkpoint(EngagementStore.projectionName, on: connection))
        }
        try await pollUntil(every: .milliseconds(20)) {
            let batch = batcher
            let (folded, after) = try await pool.withConnection { connection in
                var batcher = batch
                return (try batcher.processBatch(on: connection), batcher)
            }
            batcher = after
            return folded == 0 ? try await ReadModelSnapshot.isCaughtUp(pool) : false
        }
        return batcher
    }

    @Test(arguments: [true, false])
    func theReadModelEqualsARebuild(startsOnAnEmptyTable: Bool) async throws {
        // Late events (scrambled order) of 400 notifications: many arrive after the cache forgot
        // their notification's state.
        let items = ProjectionFixtures.scrambled(ProjectionFixtures.events(notifications: 400, seed: 41), seed: 3)
        let half = items.count / 2
        _ = try await store.append(Array(items[..<half]))
        if !startsOnAnEmptyTable {
            // Another batcher (an earlier process) folded the first half.
            try await catchUp(batchSize: 500)
        }
        _ = try await store.append(Array(items[half...]))
        let batcher = try await catchUp(batchSize: 53)
        // Its filter knows every stored notification: from the start, or once it scanned the
        // states the earlier batcher wrote (about 350, in chunks of 60).
        #expect(batcher.stateCache?.knowsEveryStoredNotification == true)
        let incremental = try await ReadModelSnapshot.rows(pool)
        #expect(!incremental.isEmpty)

        #expect(try await EngagementRebuild(pool: pool, batchSize: 211).run() > 0)
        let rebuilt = try await ReadModelSnapshot.rows(pool)
        let onlyIncremental = Set(incremental).subtracting(rebuilt), onlyRebuilt = Set(rebuilt).subtracting(incremental)
        #expect(rebuilt.count == incremental.count)
        #expect(onlyIncremental.isEmpty, "only in the incremental model: \(onlyIncremental.sorted().prefix(3))")
        #expect(onlyRebuilt.isEmpty, "only in the rebuilt model: \(onlyRebuilt.sorted().prefix(3))")
    }
}
