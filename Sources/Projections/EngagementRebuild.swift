import EngageCore
import EventStore
import Postgres
import Runtime

/// Replays the whole log into fresh copies of the read-model tables, then swaps them in within
/// one transaction: readers see the old model until the swap commits and the new one after, never
/// a half-built one. The live projector may keep running; the swap replaces its tables (and sets
/// the checkpoint under the row lock), which the projector notices by the states table's oid even
/// when the checkpoint stays where it was (it is fenced and resynchronizes).
///
/// After `engage log prune` the log no longer holds the pruned days, while the live read model
/// still counts their notifications: a rebuild would drop them. It refuses unless told to
/// `.discard` them (then the model is what the kept events fold to); `engage log restore` brings
/// the days back first.
public struct EngagementRebuild: Sendable {
    public let pool: ConnectionPool
    public let batchSize: Int
    public let prunedDays: PrunedDaysPolicy

    /// What to do when the log was pruned.
    public enum PrunedDaysPolicy: Sendable {
        /// Stop with `PrunedLogError` before changing anything.
        case refuse
        /// Rebuild from the events kept: the pruned days' notifications leave the read model.
        case discard
    }

    /// The rebuild would lose what the pruned days contributed.
    public struct PrunedLogError: Error, CustomStringConvertible {
        public let days: [PrunedDays.Day]

        public var description: String {
            let events = days.reduce(0) { $0 + $1.events }
            let range = days.count == 1 ? Self.day(days[0]) : "\(Self.day(days[0])) to \(Self.day(days[days.count - 1]))"
            let archived = days.contains { $0.archiveFile != nil }
                ? "restore their archive first (engage log restore DIR)" : "they were pruned without an archive"
            return "the log no longer holds the \(events) events of \(days.count) day(s) pruned by engage log prune (recorded \(range)); "
                + "the read model counts their notifications now and a rebuild would drop them: \(archived), "
                + "or rebuild from the events kept with --discard-pruned"
        }

        private static func day(_ day: PrunedDays.Day) -> String { String(day.day.rfc3339.prefix(10)) }
    }

    /// `engage log prune` or `engage log restore` changed the pruned days while the rebuild ran: a
    /// day restored meanwhile has its events back behind the rebuild's position, which it never
    /// folds (and, restored, the day is not marked as left out either); a day pruned after its
    /// events were replayed would be marked as left out while the model counts it. Nothing was
    /// swapped in; a rebuild run again sees the days as they are now.
    public struct PrunedDaysChangedError: Error, CustomStringConvertible {
        /// The days pruned, restored or pruned again while the rebuild ran.
        public let days: [Timestamp]

        public var description: String {
            "engage log prune or engage log restore changed \(days.count) day(s) while the rebuild ran ("
                + days.map { String($0.rfc3339.prefix(10)) }.joined(separator: ", ")
                + "); nothing was swapped in: run the rebuild again"
        }
    }

    /// How the swap waits for the read model's tables. It takes their ACCESS EXCLUSIVE locks, and a
    /// swap waiting behind a long report query would hold up every reader queued behind it
    /// (dashboards, `GET /v1/report`, the live projector) until that query ends. So each attempt
    /// waits at most `lockTimeout`, rolls back, catches up with the log again, pauses while the
    /// readers pass, and tries again; after `attempts` (about 25 minutes with the defaults) the
    /// rebuild fails with `SwapLockedOut`, nothing swapped in. The first wait and every tenth are
    /// logged (`rebuild.lock_wait`). `lockTimeout` stays above `deadlock_timeout` (1 s by
    /// default): a lock request that has waited that long on an autovacuum of the table cancels
    /// the vacuum, which the swap needs, since the read model's tables are vacuumed often.
    public struct SwapLockWait: Sendable {
        public var lockTimeout: Duration = .seconds(2)
        public var retryPause: Duration = .milliseconds(500)
        public var attempts = 600
        public init() {}
    }

    public var swapLockWait = SwapLockWait()
    public var logger: Logger?

    /// Every attempt at the swap waited for a lock and was rolled back.
    public struct SwapLockedOut: Error, CustomStringConvertible {
        public let gaveUp: BoundedLockWait.GaveUp

        public var description: String {
            "\(gaveUp); nothing was swapped in (the live read model is as it was): end that transaction, or rebuild again later"
        }
    }

    /// Another rebuild of the read model holds its lock: two at once would replay into the same
    /// copies, and the first to fail would drop the other's.
    public struct AlreadyRunning: Error, CustomStringConvertible {
        public var description: String {
            "another rebuild of the read model is running (it holds the rebuild's lock): let it finish; nothing was changed"
        }
    }

    /// "rebuild " in ASCII, the advisory lock a rebuild holds for its whole run (its session's), so
    /// that a second one refuses and `engage log prune` can tell a running rebuild's checkpoint
    /// from one a stopped process left.
    public static let lockKey: Int64 = 0x7265_6275_696C_6420

    /// True while some session (or the one of backend `holder`) holds a rebuild's lock.
    static func isRunning(holder: Int32? = nil, on connection: Connection) throws -> Bool {
        // pg_locks shows a bigint advisory key as its high and low 32 bits.
        try connection.query("""
            SELECT EXISTS (SELECT 1 FROM pg_locks
                           WHERE locktype = 'advisory' AND granted AND objsubid = 1
                             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                             AND classid::int8 = \(Self.lockKey >> 32) AND objid::int8 = \(Self.lockKey & 0xFFFF_FFFF)
                             AND (\(holder.map(Int64.init))::int4 IS NULL OR pid = \(holder.map(Int64.init))::int4))
            """)[0].decode(0, as: Bool.self)
    }

    public init(pool: ConnectionPool, batchSize: Int = 10_000, prunedDays: PrunedDaysPolicy = .refuse, logger: Logger? = nil) {
        self.pool = pool
        self.batchSize = batchSize
        self.prunedDays = prunedDays
        self.logger = logger
    }

    public struct Progress: Sendable {
        public var events: Int
        /// Events visible in the log when the rebuild started (an estimate of the total).
        public var total: Int
    }

    /// Returns the number of events replayed.
    @discardableResult
    public func run(progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> Int {
        // A connection of its own holds the lock for the whole run.
        let lockPool = ConnectionPool(configuration: pool.configuration, size: 1)
        do {
            let lockHolder = try await lockPool.withConnection { connection -> Int32? in
                let acquired = try connection.query("SELECT pg_try_advisory_lock(\(Self.lockKey))")[0].decode(0, as: Bool.self)
                return acquired ? connection.backendPID : nil
            }
            guard let lockHolder else { throw AlreadyRunning() }
            let replayed = try await runHoldingLock(lockHolder, progress: progress)
            await release(lockPool)
            return replayed
        } catch {
            await release(lockPool)
            throw error
        }
    }

    /// Unlocks before closing: the server ends a closed session's backend, and frees its locks,
    /// only a moment after the client has gone, and a rebuild started right after this one would
    /// find the lock still held. Outside the caller's task, so that a cancelled rebuild unlocks too.
    private func release(_ lockPool: ConnectionPool) async {
        _ = try? await Task {
            try await lockPool.withConnection(answerLimit: .seconds(10)) { connection in
                _ = try connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
            }
        }.value
        await lockPool.close()
    }

    /// The checkpoint of the copies while they are rebuilt.
    private static let shadowName = EngagementStore.projectionName + ":rebuild"

    private static func forgetShadowCheckpoint(on connection: Connection) throws {
        try connection.execute("DELETE FROM projection_checkpoints WHERE projection = \(shadowName)")
    }

    private func runHoldingLock(_ lockHolder: Int32, progress: @escaping @Sendable (Progress) -> Void) async throws -> Int {
        let prunedDays = self.prunedDays
        let recordedAtStart = try await pool.withConnection { connection -> [PrunedDays.Day] in
            let recorded = try PrunedDays.all(on: connection)
            let missing = recorded.filter { $0.restoredAt == nil }
            if prunedDays == .refuse && !missing.isEmpty { throw PrunedLogError(days: missing) }
            return recorded
        }
        do {
            let total = try await pool.withConnection { connection -> Int in
                try Self.createShadowTables(on: connection)
                try Self.forgetShadowCheckpoint(on: connection)
                return try connection.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self)
            }
            return try await replayAndSwap(lockHolder, total: total, recordedAtStart: recordedAtStart, progress: progress)
        } catch {
            await dropCopies(lockHolder, after: error)
            throw error
        }
    }

    /// A rebuild that failed leaves nothing behind: its copies are the size of the read model, and
    /// the next rebuild starts from empty copies anyway. Outside the caller's task, so that a
    /// cancelled rebuild drops them too, and only while its lock is still held (they might be
    /// another rebuild's otherwise). Best effort: a database that cannot be reached now leaves
    /// them for the next rebuild, which replaces them.
    private func dropCopies(_ lockHolder: Int32, after failure: any Error) async {
        let pool = self.pool
        do {
            try await Task {
                try await pool.withTransaction(answerLimit: .seconds(30)) { connection in
                    guard try Self.isRunning(holder: lockHolder, on: connection) else { throw LockLost() }
                    for table in ReadModelTables.rebuild.all {
                        try connection.execute("DROP TABLE IF EXISTS \(unsafeSQL: table)")
                    }
                    try Self.forgetShadowCheckpoint(on: connection)
                }
            }.value
        } catch {
            logger?.warning("rebuild.copies_left", ["error": "\(error)", "after": "\(failure)"])
        }
    }

    /// The rebuild's lock session ended while it ran (a terminated backend, `idle_session_timeout`,
    /// a failover): another rebuild may have started on its copies. Nothing was swapped in.
    public struct LockLost: Error, CustomStringConvertible {
        public var description: String {
            "the rebuild's lock was lost while it ran (its session ended); nothing was swapped in: run the rebuild again"
        }
    }

    private func replayAndSwap(_ lockHolder: Int32, total: Int, recordedAtStart: [PrunedDays.Day],
                               progress: @escaping @Sendable (Progress) -> Void) async throws -> Int {
        let batchSize = self.batchSize
        let batcher = BatcherBox(EngagementBatcher(tables: .rebuild, checkpointName: Self.shadowName, batchSize: batchSize,
                                                   cacheLimit: 2_000_000, position: .start))
        var replayed = 0
        // Catch up with the log outside the swap, so the swap transaction only has a little left to do.
        while true {
            let count = try await pool.withConnection { connection in try batcher.withValue { try $0.processBatch(on: connection) } }
            if count == 0 { break }
            replayed += count
            progress(Progress(events: replayed, total: max(total, replayed)))
        }
        let lockWait = BoundedLockWait(lockTimeout: swapLockWait.lockTimeout, retryPause: swapLockWait.retryPause,
                                       attempts: swapLockWait.attempts, logging: ("rebuild", "step"), to: logger)
        do {
            replayed += try await swapIn(after: lockWait, lockHolder: lockHolder, batcher: batcher,
                                         recordedAtStart: recordedAtStart)
        } catch let error as BoundedLockWait.GaveUp {
            throw SwapLockedOut(gaveUp: error)
        }
        progress(Progress(events: replayed, total: max(total, replayed)))
        return replayed
    }

    /// Folds what the log gained since the catch-up and swaps the rebuilt tables in, in one
    /// transaction; returns the events folded on the way.
    private func swapIn(after lockWait: BoundedLockWait, lockHolder: Int32, batcher: BatcherBox,
                        recordedAtStart: [PrunedDays.Day]) async throws -> Int {
        let batchSize = self.batchSize
        let prunedDays = self.prunedDays
        let migrator = try Migrator.fromSQLDirectory()
        return try await pool.withConnection { connection in
            var caughtUpBetweenAttempts = 0
            let tail = try lockWait.run("the rebuild's swap", on: connection, betweenAttempts: { connection in
                while true {
                    let count = try batcher.withValue { try $0.processBatch(on: connection) }
                    if count == 0 { break }
                    caughtUpBetweenAttempts += count
                }
            }) { connection -> Int in
                // First, before any table lock a migration might wait for: the copies have the
                // schema of the rebuild's start, and a newer engage may have migrated the live
                // tables since (019 widened a column); swapping the copies in would undo that.
                try migrator.holdSchema(on: connection)
                // Blocks the live projector's next batch until the swap commits.
                _ = try EngagementStore.beginBatch(EngagementStore.projectionName, waitsForFlush: true, on: connection)
                var tail = 0
                var position = try EngagementStore.checkpoint(Self.shadowName, on: connection)
                while true {
                    let events = FoldedEvents(try EventStore.readFoldable(after: position, limit: batchSize, on: connection))
                    guard let last = events.last else { break }
                    let known = try EngagementStore.loadStates(Array(events.states.keys), tables: .rebuild, on: connection)
                    try EngagementStore.apply(EngagementChanges.compute(events, known: known), tables: .rebuild, on: connection)
                    position = last
                    tail += events.eventCount
                }
                // Again, after the last read: a prune that began before this rebuild (its checks
                // saw no rebuild) records each day before its events go, and a restore marks each
                // day once its events are back behind this rebuild's position, which it never
                // folds. Any day pruned or restored since the start shows here, and the swap must
                // not go ahead (a day pruned and restored meanwhile too: its times changed).
                let recorded = try PrunedDays.all(on: connection)
                let missing = recorded.filter { $0.restoredAt == nil }
                if prunedDays == .refuse && !missing.isEmpty { throw PrunedLogError(days: missing) }
                let changed = Self.changedDays(from: recordedAtStart, to: recorded)
                if !changed.isEmpty { throw PrunedDaysChangedError(days: changed) }
                try Self.swapIn(on: connection, views: migrator.viewScripts)
                if prunedDays == .discard { try PrunedDays.markRebuiltWithout(on: connection) }
                // The days restored before this rebuild began are in what it folded; one restored
                // since (after the check above) is not, and keeps its mark.
                try PrunedDays.markRebuiltWith(recordedAtStart, on: connection)
                let replayedBefore = try connection.query("""
                    SELECT events_processed FROM projection_checkpoints WHERE projection = \(Self.shadowName)
                    """).rows.first.map { try $0.decode(0, as: Int.self) } ?? 0
                try connection.execute("""
                    UPDATE projection_checkpoints
                    SET transaction_id = \(String(position.transactionID))::xid8, position = \(position.sequence),
                        events_processed = \(replayedBefore + tail), updated_at = now()
                    WHERE projection = \(EngagementStore.projectionName)
                    """)
                try Self.forgetShadowCheckpoint(on: connection)
                // Last, once the swap has every lock it waits for: from here to the commit, another
                // rebuild's DROP of the copies would wait for this transaction.
                guard try Self.isRunning(holder: lockHolder, on: connection) else { throw LockLost() }
                return tail
            }
            return caughtUpBetweenAttempts + tail
        }
    }

    /// The days whose prune or restore differs between two readings of the pruned days (a rebuild
    /// marking days as left out does not count: that is what the rebuild itself does).
    static func changedDays(from before: [PrunedDays.Day], to after: [PrunedDays.Day]) -> [Timestamp] {
        func state(_ day: PrunedDays.Day) -> [Timestamp?] { [day.prunedAt, day.restoredAt] }
        let earlier = Dictionary(before.map { ($0.day, state($0)) }, uniquingKeysWith: { first, _ in first })
        return after.filter { earlier[$0.day] != state($0) }.map(\.day)
    }

    static func createShadowTables(on connection: Connection) throws {
        // INCLUDING STORAGE keeps the states' column uncompressed (migration 014) in the copy.
        for (live, shadow) in zip(ReadModelTables.live.all, ReadModelTables.rebuild.all) {
            try connection.execute("DROP TABLE IF EXISTS \(unsafeSQL: shadow)")
            try connection.execute("CREATE TABLE \(unsafeSQL: shadow) (LIKE \(unsafeSQL: live) INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES INCLUDING STORAGE)")
            // LIKE copies no storage parameters: engagement_devices' fillfactor (migration 016).
            let fillfactor = try connection.query("""
                SELECT option_value::int FROM pg_class, pg_options_to_table(reloptions)
                WHERE pg_class.oid = \(live)::regclass AND option_name = 'fillfactor'
                """).rows.first.map { try $0.decode(0, as: Int.self) }
            if let fillfactor {
                try connection.execute("ALTER TABLE \(unsafeSQL: shadow) SET (fillfactor = \(unsafeSQL: String(fillfactor)))")
            }
        }
    }

    /// Drops the live tables (and the views over them) and renames the shadow copies into their
    /// place, then recreates the views; the caller's transaction makes it one atomic step.
    static func swapIn(on connection: Connection, views: [(name: String, script: String)]) throws {
        for (live, shadow) in zip(ReadModelTables.live.all, ReadModelTables.rebuild.all) {
            // LIKE names the copies' indexes after the copy: each gets the name of the live index
            // it copies (same uniqueness, columns and predicate), which a later migration may name.
            let renames = try connection.query("""
                WITH indexes AS (
                    SELECT indrelid, indisunique, c.relname::text AS name,
                           regexp_replace(pg_get_indexdef(indexrelid), '^CREATE (UNIQUE )?INDEX \\S+ ON \\S+ ', '') AS shape
                    FROM pg_index JOIN pg_class c ON c.oid = indexrelid
                    WHERE indrelid IN (\(live)::regclass, \(shadow)::regclass))
                SELECT copy.name, original.name
                FROM indexes copy JOIN indexes original USING (indisunique, shape)
                WHERE copy.indrelid = \(shadow)::regclass AND original.indrelid = \(live)::regclass
                """).rows.map { (try $0.decode(0, as: String.self), try $0.decode(1, as: String.self)) }
            try connection.execute("DROP TABLE \(unsafeSQL: live) CASCADE")
            try connection.execute("ALTER TABLE \(unsafeSQL: shadow) RENAME TO \(unsafeSQL: live)")
            for (copy, original) in renames where copy != original {
                try connection.execute("ALTER INDEX \(identifier: copy) RENAME TO \(identifier: original)")
            }
        }
        for view in views {
            try connection.executeScript(unsafeSQL: view.script)
        }
    }
}
