@testable import EventStore
import Foundation
import Postgres
import Projections
import Runtime
import Testing
import TestSupport

/// A rebuild's swap takes the read model's tables ACCESS EXCLUSIVE. Behind a long report query it
/// must not stand in line for long, since every reader queues behind a waiting lock request: it
/// waits a moment, rolls back, catches up, and tries again, and gives up with a clear error when
/// the query never ends, nothing swapped in.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct RebuildSwapLockWaitTests {
    let pool: ConnectionPool
    let store: EventStore
    let database: PostgresConfiguration

    init() throws {
        database = try TestPostgres.freshDatabase()
        pool = ConnectionPool(configuration: database, size: 4)
        store = EventStore(pool: pool)
    }

    /// A report query in a transaction that has not ended: it holds engagement_daily (ACCESS SHARE).
    static func longReader(_ database: PostgresConfiguration) throws -> OpenTransaction {
        try OpenTransaction(database, holding: "SELECT count(*) FROM engagement_daily")
    }

    func rebuild(lockTimeout: Duration, attempts: Int = 1000, logger: Logger) -> EngagementRebuild {
        var rebuild = EngagementRebuild(pool: pool, batchSize: 97, logger: logger)
        rebuild.swapLockWait.lockTimeout = lockTimeout
        rebuild.swapLockWait.retryPause = .milliseconds(20)
        rebuild.swapLockWait.attempts = attempts
        return rebuild
    }

    /// Runs a projector from the checkpoint a rebuild left until it has folded every event stored.
    func catchUp() async throws {
        var configuration = Projector.Configuration()
        configuration.pollInterval = .milliseconds(20)
        let projector = Projector(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()),
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()))
        let running = Task { try await projector.run() }
        try await pollUntil(every: .milliseconds(20)) { try await ReadModelSnapshot.isCaughtUp(pool) }
        running.cancel()
        _ = try? await running.value
        #expect(try await pool.withConnection {
            try $0.query("SELECT (SELECT events_processed FROM projection_checkpoints WHERE projection = 'engagement') = (SELECT count(*) FROM events)")[0]
                .decode(0, as: Bool.self)
        }, "every event folded once")
    }

    /// Some session waits for engagement_daily's ACCESS EXCLUSIVE lock: the swap's request.
    func aSwapIsWaiting() async throws -> Bool {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT count(*) FROM pg_locks
                WHERE NOT granted AND mode = 'AccessExclusiveLock' AND relation = 'engagement_daily'::regclass
                """)[0].decode(0, as: Int.self) > 0
        }
    }

    /// The rebuild's copies and its checkpoint that exist.
    func copiesLeft() async throws -> [String] {
        let tables = ReadModelTables.rebuild.all
        return try await pool.withConnection { connection in
            try connection.query("""
                SELECT t FROM unnest(\(tables)::text[]) AS t WHERE to_regclass(t) IS NOT NULL
                UNION ALL SELECT projection FROM projection_checkpoints WHERE projection = 'engagement:rebuild'
                """).rows.map { try $0.decode(0, as: String.self) }.sorted()
        }
    }

    @Test func aSecondRebuildRefusesWhileOneRunsAndLeavesItsCopiesAlone() async throws {
        let events = ProjectionFixtures.events(notifications: 50, seed: 35)
        _ = try await store.append(events)
        // Below every other test's transactions, so that the rebuild reads them all.
        try await TestPostgres.waitForEarlierTransactions(pool)
        let reader = try Self.longReader(database)
        defer { reader.connection.close() }
        let sink = MemoryLogSink()
        let first = Task { [self] in try await rebuild(lockTimeout: .milliseconds(100), logger: Logger(label: "test", sink: sink)).run() }
        try await pollUntil(every: .milliseconds(5)) { try await aSwapIsWaiting() }

        let refusal = await #expect(throws: EngagementRebuild.AlreadyRunning.self) { try await EngagementRebuild(pool: pool).run() }
        #expect(String(describing: try #require(refusal)).hasPrefix("another rebuild of the read model is running"))
        #expect(try await copiesLeft().count == ReadModelTables.rebuild.all.count + 1, "the running rebuild's copies are still there")

        try reader.commit()
        #expect(try await first.value == events.count)
        #expect(try await copiesLeft() == [], "swapped in: no copies left")
        // The lock went with the rebuild: the next one runs.
        try await EngagementRebuild(pool: pool).run()
    }

    func liveTable() async throws -> Int64 {
        try await pool.withConnection { try $0.query("SELECT 'engagement_daily'::regclass::oid::int8")[0].decode(0, as: Int64.self) }
    }

    /// A rebuild of 30 notifications' events whose swap waits behind a long reader; the caller
    /// closes the reader's connection.
    func rebuildWaitingBehindALongReader(seed: UInt64) async throws -> (live: Int64, reader: OpenTransaction, running: Task<Int, any Error>) {
        _ = try await store.append(ProjectionFixtures.events(notifications: 30, seed: seed))
        let live = try await liveTable()
        let reader = try Self.longReader(database)
        let running = Task { [self] in
            try await rebuild(lockTimeout: .milliseconds(100), logger: Logger(label: "test", sink: MemoryLogSink())).run()
        }
        try await pollUntil(every: .milliseconds(5)) { try await aSwapIsWaiting() }
        return (live, reader, running)
    }

    @Test func aCancelledRebuildDropsItsCopiesAndReleasesItsLock() async throws {
        let (live, reader, running) = try await rebuildWaitingBehindALongReader(seed: 36)
        defer { reader.connection.close() }
        #expect(try await copiesLeft().count == ReadModelTables.rebuild.all.count + 1)
        running.cancel()
        await #expect(throws: CancellationError.self) { _ = try await running.value }
        #expect(try await copiesLeft() == [], "the cancelled rebuild's copies and checkpoint were dropped")
        #expect(try await liveTable() == live)
        try reader.commit()
        // Its lock went with it: a rebuild right after runs.
        try await EngagementRebuild(pool: pool).run()
        #expect(try await liveTable() != live)
    }

    @Test func aRebuildWhoseLockWasLostSwapsNothingIn() async throws {
        let (live, reader, running) = try await rebuildWaitingBehindALongReader(seed: 37)
        defer { reader.connection.close() }
        // The lock's session ends (an administrator's pg_terminate_backend, idle_session_timeout).
        #expect(try await pool.withConnection { connection in
            try connection.query("""
                SELECT pg_terminate_backend(pid) FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND objsubid = 1
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND classid::int8 = \(EngagementRebuild.lockKey >> 32)
                """).rowCount
        } == 1)
        try reader.commit()
        await #expect(throws: EngagementRebuild.LockLost.self) { _ = try await running.value }
        #expect(try await liveTable() == live, "nothing swapped in")
        // Its copies stay (they might have been another rebuild's); the next rebuild replaces them.
        try await EngagementRebuild(pool: pool).run()
        #expect(try await liveTable() != live)
        #expect(try await copiesLeft() == [])
    }

    @Test func readersPassWhileTheSwapWaitsAndItFinishesOnceTheLongReaderEnds() async throws {
        _ = try await store.append(ProjectionFixtures.events(notifications: 120, seed: 31))
        let reader = try Self.longReader(database)
        defer { reader.connection.close() }
        let sink = MemoryLogSink()
        let running = Task { [self] in try await rebuild(lockTimeout: .milliseconds(100), logger: Logger(label: "test", sink: sink)).run() }

        try await pollUntil(every: .milliseconds(5)) { try await aSwapIsWaiting() }
        // A reader arriving now queues behind the swap's request; the swap gives its place up
        // within its lock timeout, so the reader gets the table long before its own 10 s.
        let laterReader = try Connection(configuration: database)
        defer { laterReader.close() }
        try laterReader.execute("SET lock_timeout = '10s'")
        for _ in 0..<3 {
            #expect(try laterReader.query("SELECT count(*) FROM engagement_daily")[0].decode(0, as: Int.self) == 0)
        }
        try await pollUntil(every: .milliseconds(20)) { sink.lines.contains { $0.contains("msg=rebuild.lock_wait ") } }
        let wait = try #require(sink.lines.first { $0.contains("msg=rebuild.lock_wait ") })
        #expect(wait.contains("lock.timeout_ms=100") && wait.contains("lock.attempt=1 "), "\(wait)")
        #expect(wait.contains("pid \(reader.pid) (idle in transaction, transaction "), "\(wait)")
        #expect(wait.contains("AccessShareLock on engagement_daily"), "\(wait)")

        // Events stored while the swap waits are folded between attempts, in the last one, or
        // (above the visibility horizon then, which other tests' transactions can hold) by the
        // projector from the swapped-in checkpoint: once, whichever it is.
        _ = try await store.append(ProjectionFixtures.events(notifications: 40, seed: 32, app: "app-2"))
        try reader.commit()
        _ = try await running.value
        try await catchUp()
        let retried = try await ReadModelSnapshot.rows(pool)
        #expect(retried.contains { $0.contains("app-2") }, "the events stored during the wait are in the model")
        try await EngagementRebuild(pool: pool).run()
        try await catchUp()
        #expect(try await ReadModelSnapshot.rows(pool) == retried)
        #expect(!sink.lines.contains { $0.contains("rebuild.lock_wait_gave_up") })
    }

    @Test func theSwapGivesUpWhenTheLongReaderNeverEndsAndLeavesTheLiveModelAsItWas() async throws {
        _ = try await store.append(ProjectionFixtures.events(notifications: 60, seed: 33))
        let live = try await liveTable()
        let reader = try Self.longReader(database)
        defer { reader.connection.close() }
        let sink = MemoryLogSink()

        let failure = await #expect(throws: EngagementRebuild.SwapLockedOut.self) {
            try await rebuild(lockTimeout: .milliseconds(50), attempts: 3, logger: Logger(label: "test", sink: sink)).run()
        }
        let description = String(describing: try #require(failure))
        #expect(description.hasPrefix(
            "the rebuild's swap was rolled back: 3 attempts each waited 50 ms for a lock held by another session and gave up; held by: "),
            "\(description)")
        #expect(description.contains("pid \(reader.pid) (idle in transaction, transaction "), "\(description)")
        #expect(description.hasSuffix("nothing was swapped in (the live read model is as it was): end that transaction, or rebuild again later"))
        #expect(sink.lines.contains { $0.contains("msg=rebuild.lock_wait_gave_up") && $0.contains("lock.attempts=3") })
        try reader.commit()
        #expect(try await liveTable() == live)
        #expect(try await pool.withConnection {
            try $0.query("SELECT count(*) FROM projection_checkpoints WHERE projection = 'engagement'")[0].decode(0, as: Int.self)
        } == 0, "the live checkpoint was not moved")
        #expect(try await copiesLeft() == [], "the rebuilt copies and their checkpoint were dropped")

        // The reader was the only obstacle: ended, the rebuild swaps in.
        try await EngagementRebuild(pool: pool).run()
        #expect(try await liveTable() != live)
    }

    /// A migration run holds the migrations' advisory lock for its whole run, which the swap waits
    /// for (`Migrator.holdSchema`): giving up, it names that lock and its holder, not "no table lock".
    @Test func theSwapThatWaitedForAMigrationSaysSo() async throws {
        _ = try await store.append(ProjectionFixtures.events(notifications: 20, seed: 34))
        let migrating = try Connection(configuration: database)
        defer { migrating.close() }
        _ = try migrating.query("SELECT pg_advisory_lock(\(Migrator.lockKey))")
        let migratingPID = try migrating.query("SELECT pg_backend_pid()")[0].decode(0, as: Int.self)
        let failure = await #expect(throws: EngagementRebuild.SwapLockedOut.self) {
            try await rebuild(lockTimeout: .milliseconds(50), attempts: 2, logger: Logger(label: "test", sink: MemoryLogSink())).run()
        }
        let description = String(describing: try #require(failure))
        #expect(description.contains("held by: the migrations' lock, held by pid \(migratingPID) (a migration is running"), "\(description)")
        _ = try migrating.query("SELECT pg_advisory_unlock(\(Migrator.lockKey))")
        try await EngagementRebuild(pool: pool).run()
    }
}
