import Foundation
import Postgres
import Runtime

/// One step in one transaction whose every lock wait is bounded by `lock_timeout`: a migration
/// or a views script of the migrator, a rebuild's swap of the read model. A step waiting for a
/// table's lock behind a long transaction holds up every statement queued behind it (for
/// `event_ids`, every append; for a view or a read-model table, every dashboard query), so it
/// waits a moment, rolls back, pauses while they pass, and tries again; the first wait and every
/// tenth are logged with the sessions that hold locks since before it began
/// (`<subject>.lock_wait`), and after the last attempt it gives up with `GaveUp`
/// (`<subject>.lock_wait_gave_up`).
public struct BoundedLockWait: Sendable {
    public let lockTimeout: Duration
    public let retryPause: Duration
    public let attempts: Int
    /// What the log lines are about: `migration` gives `migration.lock_wait` with `file=<step>`.
    let subject: (event: String, stepField: String)
    let logger: Logger?

    public init(lockTimeout: Duration, retryPause: Duration, attempts: Int,
                logging subject: (event: String, stepField: String), to logger: Logger?) {
        self.lockTimeout = lockTimeout
        self.retryPause = retryPause
        self.attempts = attempts
        self.subject = subject
        self.logger = logger
    }

    /// Every attempt at `step` waited `lockTimeoutMilliseconds` for a lock and was rolled back;
    /// `heldBy` names the sessions holding table locks since before the last wait.
    public struct GaveUp: Error, Sendable, Equatable, CustomStringConvertible {
        public let step: String
        public let attempts: Int
        public let lockTimeoutMilliseconds: Int64
        public let heldBy: String

        public var description: String {
            "\(step) was rolled back: \(attempts) attempts each waited \(lockTimeoutMilliseconds) ms for a lock "
                + "held by another session and gave up; held by: \(heldBy)"
        }
    }

    /// Runs `body` in a transaction, again after each lock timeout, up to `attempts` times;
    /// `betweenAttempts` runs outside any transaction before each pause (a rebuild catches up there,
    /// so that its next attempt has little left to do).
    public func run<T>(_ step: String, on connection: Connection, betweenAttempts: (Connection) throws -> Void = { _ in },
                       _ body: (Connection) throws -> T) throws -> T {
        let timeoutMilliseconds = max(1, Self.milliseconds(lockTimeout))
        let timeout = "\(timeoutMilliseconds)ms"
        var attempt = 1
        while true {
            do {
                return try connection.transaction { connection in
                    _ = try connection.query("SELECT set_config('lock_timeout', \(timeout), true)")
                    return try body(connection)
                }
            } catch let error as PostgresError where error.sqlState == Self.lockNotAvailable {
                let holders = (try? Self.holders(on: connection, heldFor: timeoutMilliseconds)) ?? "unknown (the lock table could not be read)"
                if attempt >= attempts {
                    logger?.error("\(subject.event).lock_wait_gave_up", [
                        subject.stepField: step, "lock.attempts": String(attempts), "lock.timeout_ms": String(timeoutMilliseconds),
                        "lock.held_by": holders,
                    ])
                    throw GaveUp(step: step, attempts: attempts, lockTimeoutMilliseconds: timeoutMilliseconds, heldBy: holders)
                }
                // The first wait, then every tenth: about every 15 s with the defaults.
                if attempt == 1 || attempt % 10 == 0 {
                    logger?.warning("\(subject.event).lock_wait", [
                        subject.stepField: step, "lock.attempt": String(attempt), "lock.attempts": String(attempts),
                        "lock.timeout_ms": String(timeoutMilliseconds), "lock.held_by": holders,
                    ])
                }
                attempt += 1
                try betweenAttempts(connection)
                _ = try connection.query("SELECT pg_sleep(\(Double(Self.milliseconds(retryPause)) / 1000))")
            }
        }
    }

    /// SQLSTATE lock_not_available: `lock_timeout` ran out.
    public static let lockNotAvailable = "55P03"

    /// Bounds the lock waits of the current transaction to half of the server's
    /// `deadlock_timeout`: a lock request that waits that long on an autovacuum worker cancels the
    /// worker's vacuum, so maintenance that may wait for one gives up first and comes back later.
    static func boundLockWaitsBelowVacuumCancellation(on connection: Connection) throws {
        _ = try connection.query("""
            SELECT set_config('lock_timeout',
                greatest(1, floor(extract(epoch FROM current_setting('deadlock_timeout')::interval) * 500))::int || 'ms', true)
            """)
    }

    public static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    /// What the step waited for: the other sessions of this database holding a table's lock in a
    /// transaction older than the wait, "pid 4242 (idle in transaction, transaction 12 s old):
    /// AccessExclusiveLock on engagement_daily". PostgreSQL's lock timeout error does not name the
    /// lock, and the wait is over when it is read, so these are the candidates, not a certainty.
    private static func holders(on connection: Connection, heldFor milliseconds: Int64) throws -> String {
        let rows = try connection.query("""
            SELECT l.pid, coalesce(a.state, 'unknown'),
                   floor(extract(epoch FROM clock_timestamp() - a.xact_start))::bigint,
                   l.mode || ' on ' || l.relation::regclass::text
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.granted AND l.locktype = 'relation' AND l.pid <> pg_backend_pid()
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND a.xact_start <= clock_timestamp() - make_interval(secs => \(Double(milliseconds) / 1000))
              AND l.relation::regclass::text NOT LIKE 'pg\\_%'
            ORDER BY a.xact_start, l.pid, 4
            LIMIT 20
            """).rows
        var order: [Int] = []
        var sessions: [Int: (state: String, seconds: Int64, locks: [String])] = [:]
        for row in rows {
            let pid = try row.decode(0, as: Int.self)
            if sessions[pid] == nil {
                order.append(pid)
                sessions[pid] = (try row.decode(1, as: String.self), try row.decode(2, as: Int64.self), [])
            }
            sessions[pid]?.locks.append(try row.decode(3, as: String.self))
        }
        guard !order.isEmpty else {
            // A migration run holds the migrations' advisory lock for its whole run (the rebuild's
            // swap waits for it), which is no table lock.
            let migrating = try connection.query("""
                SELECT pid FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() AND objsubid = 1
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND classid = \(Migrator.lockKey >> 32)::oid AND objid = \(Migrator.lockKey & 0xFFFF_FFFF)::oid
                ORDER BY pid LIMIT 1
                """).rows.first.map { try $0.decode(0, as: Int.self) }
            if let migrating {
                return "the migrations' lock, held by pid \(migrating) (a migration is running: engage migrate, or an engage starting)"
            }
            return "a lock of another session (no table lock older than the wait is held now)"
        }
        return order.map { pid in
            let session = sessions[pid]!
            return "pid \(pid) (\(session.state), transaction \(session.seconds) s old): " + session.locks.joined(separator: ", ")
        }.joined(separator: "; ")
    }
}
