import Postgres
import Runtime
import Synchronization

/// Where work that only reads runs: a read replica (a hot standby) when one is configured,
/// reachable and at most `maxLag` behind its primary, the primary otherwise. Reports, analysis
/// replays and strategy replays read here, so that they do not compete with ingestion.
///
/// Every read says where it was made (`ReadSource`): on the replica with its replay lag when
/// read, or on the primary, with the reason when a replica is configured. Falling back is
/// counted (`engage_read_replica_fallbacks_total{reason}`) and logged as a warning when it
/// starts or its reason changes, and as a notice when the replica serves again. A replica found
/// unreachable is left alone for `retryUnreachableAfter`, so that reads meanwhile do not each
/// wait for a connect timeout.
///
/// Reading the log on a replica keeps it gapless: a hot standby counts every transaction it has
/// not seen finish as still running, so `pg_snapshot_xmin(pg_current_snapshot())` there never
/// passes a transaction the primary has not finished (`LogPosition`; tested on a streaming
/// replica and on pg_auto_failover's secondary).
public final class ReadDatabase: Sendable {
    public struct Configuration: Sendable {
        /// A replica further behind than this is not read. Twice PostgreSQL's default
        /// `max_standby_streaming_delay` (30 s), the longest a standby holds replay back for its
        /// own queries, so that a replica merely busy with long reads stays in use; a minute is
        /// still small beside what is read there (daily report rows, analyses run hourly or
        /// daily), and every answer states the lag it was read with.
        public var maxLag = Duration.seconds(60)
        /// How long a replica found unreachable is not tried again.
        public var retryUnreachableAfter = Duration.seconds(5)
        /// How long the replica may take to say how far behind it is before it counts as
        /// unreachable: a replica that answers nothing at all (a frozen host, a network that
        /// drops everything, its connections left open) would otherwise hold every read until it
        /// answered again. The reading takes a millisecond; 2 s is the connect timeout, the
        /// longest a replica that went away costs. Counted once the reading has a connection of
        /// the replica's pool: a wait behind long reads there is not the replica gone.
        public var answerLimit = Duration.seconds(2)

        public init(maxLag: Duration = .seconds(60), retryUnreachableAfter: Duration = .seconds(5), answerLimit: Duration = .seconds(2)) {
            self.maxLag = maxLag
            self.retryUnreachableAfter = retryUnreachableAfter
            self.answerLimit = answerLimit
        }
    }

    /// A value read, and where.
    public struct Read<Value: Sendable>: Sendable {
        public var value: Value
        public var source: ReadSource
    }

    private struct State {
        var unreachableUntil: ContinuousClock.Instant?
        /// The reason of the fallbacks going on, nil while the replica serves.
        var falling: ReadSource.Fallback?
    }

    public let primary: ConnectionPool
    public let replica: ConnectionPool?
    public let configuration: Configuration
    private let time: any TimeSource
    private let logger: Logger?
    private let metrics: ReadReplicaMetrics?
    private let state = Mutex(State())

    public init(primary: ConnectionPool, replica: ConnectionPool?, configuration: Configuration = Configuration(),
                time: any TimeSource = SystemTime(), logger: Logger, metrics: ReadReplicaMetrics?) {
        self.primary = primary
        self.replica = replica
        self.configuration = configuration
        self.time = time
        self.logger = logger
        self.metrics = metrics
    }

    /// Everything read on the primary: no replica.
    public init(primary: ConnectionPool) {
        self.primary = primary
        replica = nil
        configuration = Configuration()
        time = SystemTime()
        logger = nil
        metrics = nil
    }

    /// Runs `body` with the replica's pool when the replica is usable, else with the primary's.
    /// A replica that fails `body` for want of a connection or of an answer (`DatabaseDidNotAnswer`
    /// from `body`'s own limits), or cancels it in a conflict with replay, is left for this read,
    /// which `body` then makes again on the primary.
    public func read<T: Sendable>(_ body: @Sendable (ConnectionPool) async throws -> T) async throws -> Read<T> {
        guard let replica else { return Read(value: try await body(primary), source: .primary) }
        if let until = state.withLock({ $0.unreachableUntil }), time.now < until {
            return try await fallBack(.replicaUnreachable, body)
        }
        let lag: Duration?
        do {
            // No answer within the limit: the reading is interrupted, its connection closed. The
            // limit starts once a connection is ours: waiting while the replica's pool serves long
            // reads (a replay, an analysis) is not a replica gone (`BusyReplicaReadTests`).
            lag = try await replica.withConnection(answerLimit: configuration.answerLimit) { try ReplicaLag.measure(on: $0) }
        } catch let error as PostgresError where error.isConnectionProblem {
            return try await fallBack(.replicaUnreachable, body)
        } catch is DatabaseDidNotAnswer {
            return try await fallBack(.replicaUnreachable, body)
        }
        metrics?.lagSeconds.set(lag.map { $0 / .seconds(1) } ?? -1)
        guard let lag, lag <= configuration.maxLag else { return try await fallBack(.replicaLagging, body) }
        let value: T
        do {
            value = try await body(replica)
        } catch let error as PostgresError where error.isConnectionProblem {
            return try await fallBack(.replicaUnreachable, body)
        } catch is DatabaseDidNotAnswer {
            // The replica answered the lag's reading, then stopped answering the read itself (a
            // host frozen since): read again on the primary, as when the reading found it so.
            return try await fallBack(.replicaUnreachable, body)
        } catch let error as PostgresError where ["40001", "40P01"].contains(error.sqlState) {
            // A standby cancels a read holding up its replay with 40001, or with 40P01 when the
            // read's buffer pin deadlocked with the replay.
            return try await fallBack(.replicaConflict, body)
        }
        metrics?.replicaReads.increment()
        let recovered = state.withLock { state -> Bool in
            defer { state.falling = nil }
            return state.falling != nil
        }
        if recovered { logger?.notice("read-replica.serving", ["lag.s": ReadSource(database: .replica, lag: lag).lagSeconds]) }
        return Read(value: value, source: ReadSource(database: .replica, lag: lag))
    }

    private func fallBack<T: Sendable>(_ reason: ReadSource.Fallback,
                                       _ body: @Sendable (ConnectionPool) async throws -> T) async throws -> Read<T> {
        metrics?.fallbacks[reason]?.increment()
        if reason == .replicaUnreachable { metrics?.lagSeconds.set(-1) }
        let now = time.now
        let changed = state.withLock { state -> Bool in
            if reason == .replicaUnreachable, state.unreachableUntil.map({ now >= $0 }) ?? true {
                state.unreachableUntil = now + configuration.retryUnreachableAfter
            }
            defer { state.falling = reason }
            return state.falling != reason
        }
        if changed {
            logger?.warning("read-replica.fallback", ["reason": reason.rawValue, "max.lag.s": "\(configuration.maxLag.components.seconds)"])
        }
        return Read(value: try await body(primary), source: ReadSource(database: .primary, lag: .zero, fallback: reason))
    }

    /// Closes the replica's pool (the primary's belongs to whoever passed it).
    public func closeReplica() async {
        await replica?.close()
    }
}
