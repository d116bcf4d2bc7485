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
        try await catchUp(try await pool.withConnection { connection in
            EngagementBatcher(tables: .live, checkpointName: EngagementStore.projectionName, batchSize: batchSize,
                              cacheLimit: 40, scanChunk: 60,
                              position: try EngagementStore.checkpoint(EngagementStore.projectionName, on: connection))
        })
    }

    /// Folds everything in the log with `batcher`, caches and all; returns it.
    func catchUp(_ start: EngagementBatcher) async throws -> EngagementBatcher {
        var batcher = start
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
        #expect(try await !ReadModelSnapshot.rows(pool).isEmpty)
        try await expectTheReadModelEqualsARebuild()
    }

    /// A batch commits without waiting for the WAL's flush, so a crash of the server can lose it:
    /// its rows and its checkpoint go back together, while the batcher that wrote it remembers its
    /// states. Simulated by putting the read model and the checkpoint back as they were several
    /// batches earlier: the batcher is fenced at its next batch, forgets what it cached and folds
    /// those events again, and the model equals a rebuild.
    @Test func aBatchLostWithTheServerIsFoldedAgain() async throws {
        let items = ProjectionFixtures.scrambled(ProjectionFixtures.events(notifications: 300, seed: 43), seed: 5)
        let third = items.count / 3
        _ = try await store.append(Array(items[..<third]))
        var batcher = try await catchUp(batchSize: 97)
        let saved = try await saveReadModel()
        _ = try await store.append(Array(items[third..<(2 * third)]))
        batcher = try await catchUp(batcher)
        #expect(try await ReadModelSnapshot.rows(pool) != saved.rows)
        try await restoreReadModel()
        #expect(try await ReadModelSnapshot.rows(pool) == saved.rows)

        // Late events of the lost batches' notifications, and new ones.
        _ = try await store.append(Array(items[(2 * third)...]))
        let stale = batcher
        await #expect(throws: EngagementBatcher.Fenced.self) {
            _ = try await pool.withConnection { connection in
                var batcher = stale
                return try batcher.processBatch(on: connection)
            }
        }
        batcher = try await pool.withConnection { connection in
            var batcher = stale
            try batcher.resynchronize(on: connection)
            return batcher
        }
        #expect(batcher.position == saved.checkpoint)
        #expect(batcher.stateCache == nil)
        batcher = try await catchUp(batcher)
        try await expectTheReadModelEqualsARebuild()
    }

    /// Rebuilds the read model from the log and expects the same rows as before, row for row.
    func expectTheReadModelEqualsARebuild() async throws {
        let incremental = try await ReadModelSnapshot.rows(pool)
        #expect(try await EngagementRebuild(pool: pool, batchSize: 211).run() > 0)
        let rebuilt = try await ReadModelSnapshot.rows(pool)
        let onlyIncremental = Set(incremental).subtracting(rebuilt), onlyRebuilt = Set(rebuilt).subtracting(incremental)
        #expect(rebuilt.count == incremental.count)
        #expect(onlyIncremental.isEmpty, "only in the incremental model: \(onlyIncremental.sorted().prefix(3))")
        #expect(onlyRebuilt.isEmpty, "only in the rebuilt model: \(onlyRebuilt.sorted().prefix(3))")
    }

    /// The tables a batch writes, the checkpoint included.
    static let batchTables = ReadModelTables.live.all + ["projection_checkpoints"]

    /// Copies the read model and the checkpoint aside; returns the rows and the checkpoint saved.
    func saveReadModel() async throws -> (rows: [String], checkpoint: LogPosition) {
        try await pool.withConnection { connection in
            for table in Self.batchTables {
                try connection.execute(SQL(unsafeSQL: "CREATE TABLE saved_\(table) AS SELECT * FROM \(table)"))
            }
        }
        let checkpoint = try await pool.withConnection { try EngagementStore.checkpoint(EngagementStore.projectionName, on: $0) }
        return (try await ReadModelSnapshot.rows(pool), checkpoint)
    }

    /// Puts the copies back, in one transaction, as a server that lost its last commits would.
    func restoreReadModel() async throws {
        try await pool.withConnection { connection in
            try connection.transaction { connection in
                for table in Self.batchTables {
                    try connection.execute(SQL(unsafeSQL: "TRUNCATE \(table)"))
                    try connection.execute(SQL(unsafeSQL: "INSERT INTO \(table) SELECT * FROM saved_\(table)"))
                }
            }
        }
    }
}
