import EventStore
import Foundation
import Postgres
import Runtime
import Synchronization

/// Keeps the engagement read model up to date: tails the log from its checkpoint in batches,
/// waking on NOTIFY after appends and polling as a fallback.
///
/// One projector is active per read model across processes: it holds a session advisory lock on
/// a connection of its own; others wait as standbys and take over within `pollInterval` after the
/// active one dies (its session ends, so the lock is released). Even if two ever ran at once,
/// each batch locks the checkpoint row and checks it did not move, so nothing is counted twice.
public struct Projector: Service {
    public struct Configuration: Sendable {
        public var batchSize = 20_000
        public var pollInterval = Duration.seconds(1)
        /// The least time from one read of the log to the next once a read found fewer events
        /// than a batch (the projector is at the log's end): under steady load, a few large
        /// batches a second instead of one small batch per commit, which costs PostgreSQL
        /// markedly less (docs/design.md, "Pacing"), for up to this much more lag. A projector
        /// behind (a full batch) reads on at once. Keep it at most `pollInterval`: the wait for
        /// an append is also when the projector checks that its lock is still held.
        public var readInterval = Duration.milliseconds(100)
        /// How long one database call (a read, a batch's merge and commit, the lock's check)
        /// may go without an answer before it is interrupted and the projector starts again from
        /// its stored checkpoint. A database that answers nothing (a frozen host, a network that
        /// drops everything) would otherwise hold the projector on that host for as long as it
        /// stays so, even after a failover to another. A batch takes a fraction of a second.
        /// Counted once the call has a connection: `engage serve`'s pool is shared with the read
        /// routes, and a pool busy with long reads is not the database gone (counted, the
        /// projector dropped its batch and started again: `ProjectorBusyPoolTests`). Past it the
        /// call throws `DatabaseDidNotAnswer`, and the projector starts again from its stored
        /// checkpoint on a new connection (a failover's new primary, say).
        public var databaseAnswerLimit = Duration.seconds(30)
        public var failpoints = Failpoints.none
        public init() {}
    }

    public let pool: ConnectionPool
    public let configuration: Configuration
    public let logger: Logger
    public let metrics: ProjectorMetrics
    /// Paces the reads (`Configuration.readInterval`).
    public let time: any TimeSource
    /// A connection of its own for the lock and LISTEN; reconnecting it loses the lock.
    private let lockPool: ConnectionPool

    public init(pool: ConnectionPool, configuration: Configuration = Configuration(), logger: Logger, metrics: ProjectorMetrics,
                time: any TimeSource = SystemTime()) {
        self.pool = pool
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.time = time
        lockPool = ConnectionPool(configuration: pool.configuration, size: 1)
    }

    /// "engagement" in ASCII, the advisory lock key of this read model.
    static let lockKey: Int64 = 0x656E_6761_6765_6D74

    public func run() async throws {
        while !Task.isCancelled {
            guard let lockHolder = await acquireLock() else {
                // A standby folds nothing, so it finds nothing behind either, whatever it found
                // while it was the projector (another process may have folded on since).
                metrics.transactionIDsBehind.set(0)
                metrics.active.set(0)
                try? await Task.sleep(for: configuration.pollInterval)
                continue
            }
            metrics.active.set(1)
            logger.info("projector.active", ["projection": EngagementStore.projectionName])
            do {
                try await runActive(lockHolder: lockHolder)
            } catch is CancellationError {
                logger.debug("projector.cancelled")
                break
            } catch let behind as TransactionIDsBehindLog {
                // Nothing appended now would ever be folded: say so, fold nothing, keep the
                // checkpoint, and try again until the database's counter is repaired.
                // Logged once per stretch (the gauge is 1 until a read succeeds again).
                if metrics.transactionIDsBehind.value != 1 {
                    logger.error("projector.transaction-ids-behind-log", [
                        "checkpoint.transaction": String(behind.held), "database.next": String(behind.next),
                        "repair.epoch": String(behind.repairEpoch), "error": behind.description,
                    ])
                }
                metrics.transactionIDsBehind.set(1)
                try? await Task.sleep(for: configuration.pollInterval)
            } catch {
                logger.warning("projector.error", ["error": "\(error)"])
                try? await Task.sleep(for: configuration.pollInterval)
            }
            metrics.active.set(0)
        }
        metrics.transactionIDsBehind.set(0)
        metrics.active.set(0)
        logger.info("projector.stopped")
        // Closing the session releases the lock for a standby at once.
        await lockPool.close()
    }

    /// The connection holding the lock (its `serial`), or nil when another process holds it.
    private func acquireLock() async -> UInt64? {
        try? await lockPool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection -> UInt64? in
            let acquired = try connection.query("SELECT pg_try_advisory_lock(\(Self.lockKey))")[0].decode(0, as: Bool.self)
            guard acquired else { return nil }
            try connection.listen("engage_events")
            return connection.serial
        }
    }

    /// Folds batch after batch; while one batch is merged into the stored states and committed,
    /// the next is read on another connection and folded per notification (`FoldedEvents`), so
    /// reading and decoding the log overlap writing the read model.
    private func runActive(lockHolder: UInt64) async throws {
        let initial = try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
            try EngagementStore.checkpoint(EngagementStore.projectionName, on: connection)
        }
        let batcher = BatcherBox(EngagementBatcher(tables: .live, checkpointName: EngagementStore.projectionName,
                                                   batchSize: configuration.batchSize, position: initial))
        let failpoints = configuration.failpoints
        var current = try await read(after: initial, notBefore: time.now)
        while !Task.isCancelled {
            guard let last = current.events.last else {
                // Caught up: wait for an append (or the poll interval), making sure the lock is still ours.
                let interval = configuration.pollInterval
                let stillHolder = try await lockPool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection -> Bool in
                    // The lock is the session's: a connection that replaced a broken one holds none, even
                    // with the same backend pid (a restarted server, another host after a failover).
                    guard connection.serial == lockHolder else { return false }
                    _ = try connection.waitForNotifications(timeout: interval)
                    return true
                }
                if !stillHolder {
                    logger.warning("projector.lock-lost")
                    return
                }
                current = try await read(after: try batcher.withValue { $0.position }, notBefore: current.nextReadNotBefore)
                continue
            }
            let stopwatch = Stopwatch()
            // Constants, since the `async let` below may not capture the loop's variable.
            let (batch, nextRead) = (current.events, current.nextReadNotBefore)
            async let following = read(after: last, notBefore: nextRead)
            do {
                let processed = try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
                    try batcher.withValue { try $0.process(prefetched: batch, on: connection, failpoints: failpoints) }
                }
                metrics.events.increment(by: processed)
                metrics.batchSeconds.observe(stopwatch.elapsed)
                if batch.undecodable > 0 {
                    // Never expected (ingestion checked every event), and a rebuild skips them too,
                    // so comparing with a rebuild would not show them: said here, or nowhere.
                    metrics.undecodable.increment(by: batch.undecodable)
                    logger.warning("projector.undecodable", ["events": String(batch.undecodable),
                                                             "last": batch.last.map { "\($0)" } ?? ""])
                }
            } catch is EngagementBatcher.Fenced {
                logger.notice("projector.fenced", ["reason": "checkpoint moved by another writer"])
                // Its wait (at most `readInterval`) and read are thrown away; fencing is rare.
                _ = try? await following
                let position = try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
                    try batcher.withValue { batcher -> LogPosition in
                        try batcher.resynchronize(on: connection)
                        return batcher.position
                    }
                }
                current = try await read(after: position, notBefore: time.now)
                continue
            }
            // The batch was read again elsewhere (a promoted server: `EngagementBatcher.process`)
            // and ended at another event: the read-ahead follows the wrong one, and so would every
            // later one, each read twice.
            let position = try batcher.withValue { $0.position }
            guard position == last else {
                _ = try? await following
                current = try await read(after: position, notBefore: nextRead)
                continue
            }
            current = try await following
        }
    }

    /// A read of the log, and when the next may start (`Configuration.readInterval`).
    private struct Read: Sendable {
        var events: FoldedEvents
        var nextReadNotBefore: ContinuousClock.Instant
    }

    /// The events after `position`, folded per notification on the read's connection thread, as
    /// the batch's own work is, so that a fold of tenths of a second never holds one of the
    /// few threads of Swift's cooperative pool that the rest of the process shares.
    private func read(after position: LogPosition, notBefore: ContinuousClock.Instant) async throws -> Read {
        try await time.sleep(until: notBefore)
        let started = time.now
        let limit = configuration.batchSize
        let folded = try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
            let server = try ServerIdentity.read(on: connection)
            var folded = FoldedEvents(try EventStore.readFoldable(after: position, limit: limit, on: connection))
            folded.readAhead = (server, position)
            return folded
        }
        metrics.transactionIDsBehind.set(0)
        let pacing = ReadPacing(interval: configuration.readInterval, batchSize: limit)
        return Read(events: folded, nextReadNotBefore: pacing.nextRead(afterReadStartedAt: started, eventsRead: folded.eventCount))
    }
}

/// The batcher moves between the projector's task and connection threads, one use at a time.
final class BatcherBox: Sendable {
    private let value: Mutex<EngagementBatcher>
    init(_ value: EngagementBatcher) { self.value = Mutex(value) }
    func withValue<T: Sendable>(_ body: (inout EngagementBatcher) throws -> T) throws -> T {
        try value.withLock { try body(&$0) }
    }
}

/// The projector's metrics.
public struct ProjectorMetrics: Sendable {
    public let events: Counter
    public let batchSeconds: Histogram
    public let active: Gauge
    public let undecodable: Counter
    public let transactionIDsBehind: Gauge

    public init(registry: MetricsRegistry) {
        events = registry.counter("engage_projector_events_total", help: "Log events folded into the engagement read model.")
        batchSeconds = registry.histogram("engage_projector_batch_seconds", help: "Time to fold and commit one batch.",
                                          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
        active = registry.gauge("engage_projector_active", help: "1 while this process is the active projector, 0 as standby.")
        undecodable = registry.counter("engage_projector_undecodable_events_total",
                                       help: "Log events the projector could not decode and left out of the read model (never expected).")
        transactionIDsBehind = registry.gauge(
            "engage_projector_transaction_ids_behind_log",
            help: "1 while this process's projector finds its checkpoint at a transaction id PostgreSQL has not assigned (a database moved with pg_dump into a new cluster: docs/reliability.md), 0 once it folds again or is a standby.")
    }
}
