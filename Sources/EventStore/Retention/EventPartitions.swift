import EngageCore
import Postgres

/// The log's partitions: one per UTC week of `recorded_at`, Monday to Monday, named after its
/// Monday (`events_2026_11_30`), and after an upgrade from a single table, `events_legacy` for
/// everything recorded before (migration 010). Where a version before migration 024 made a week
/// an hour short or long (a session time zone with summer time), the week after starts where it
/// ends, and an hour left between two has a partition of its own (`events_2027_03_28_230000`).
public enum EventPartitions {
    /// One partition and the range of `recorded_at` it takes.
    public struct Partition: Sendable, Equatable {
        public var name: String
        /// Nil for a partition that starts at the beginning of time (the legacy one).
        public var lower: Timestamp?
        public var upper: Timestamp
    }

    /// How many days ahead partitions are made.
    public static let daysAhead = 7

    /// Makes the partitions holding today and the next `daysAhead` days where missing; returns
    /// how many were made. Safe to run from any number of processes at once.
    @discardableResult
    public static func ensure(daysAhead: Int = daysAhead, on connection: Connection) throws -> Int {
        try connection.query("SELECT engage_ensure_event_partitions(\(daysAhead))")[0].decode(0, as: Int.self)
    }

    /// Makes partitions for what no partition covers of the UTC day starting at `day`.
    public static func ensure(day: Timestamp, on connection: Connection) throws {
        try connection.execute("""
            SELECT engage_ensure_event_partition((\(PrunedDays.value(day)) AT TIME ZONE 'UTC')::date)
            """)
    }

    /// How long after its week's end a partition gets insert-driven vacuum back (migration 021):
    /// an append stamped by a clock a little behind the database's may still land in it.
    public static let insertVacuumDelay: Duration = .seconds(3600)

    /// What `reopenInsertVacuum` found for each week that ended while still without insert-driven vacuum.
    public struct InsertVacuumReopening: Sendable, Equatable {
        public var reopened: [String] = []
        /// Left for the next call: a vacuum or a step of summaries held the partition past the wait.
        public var busy: [String] = []
        /// Owned by another role (the one that ran the migrations): this role cannot reopen them.
        public var notOwned: [String] = []
    }

    /// Gives insert-driven vacuum back to the partitions whose week ended more than `delay` ago
    /// and that were made without it while it was open (migration 021), so that autovacuum
    /// passes over each closed week once. A partition's lock is waited for at most half of
    /// `deadlock_timeout`, so that no vacuum is cancelled for it.
    @discardableResult
    public static func reopenInsertVacuum(endedMoreThan delay: Duration = insertVacuumDelay, on connection: Connection) throws -> InsertVacuumReopening {
        try connection.transaction { connection in
            try BoundedLockWait.boundLockWaitsBelowVacuumCancellation(on: connection)
            var found = InsertVacuumReopening()
            let rows = try connection.query("""
                SELECT partition_name, outcome
                FROM engage_reopen_insert_vacuum(now() - \(String(BoundedLockWait.milliseconds(delay)) + " milliseconds")::interval)
                """).rows
            for row in rows {
                let name: String = try row.decode(0)
                switch try row.decode(1, as: String.self) {
                case "reopened": found.reopened.append(name)
                case "busy": found.busy.append(name)
                default: found.notOwned.append(name)
                }
            }
            return found
        }
    }

    /// Every partition, oldest first.
    public static func list(on connection: Connection) throws -> [Partition] {
        try connection.query("""
            SELECT name, CASE WHEN lower = '-infinity' THEN NULL ELSE lower END, upper
            FROM event_partitions
            ORDER BY 2 NULLS FIRST, 1
            """).rows.map { row in
            Partition(name: try row.decode(0),
                      lower: try row.decode(1, as: PostgresTimestamp?.self).map { Timestamp(microsecondsSinceEpoch: $0.unixMicroseconds) },
                      upper: Timestamp(microsecondsSinceEpoch: try row.decode(2, as: PostgresTimestamp.self).unixMicroseconds))
        }
    }
}

extension PostgresError {
    /// An append found no partition for its rows' day: the check violation PostgreSQL raises for
    /// a row no partition takes names a table and no constraint (a CHECK's names its constraint).
    /// Read from those fields, not the message, which `lc_messages` may translate; a server that
    /// does not name the table (older releases may not) is read by its English message.
    var isMissingPartition: Bool {
        sqlState == "23514" && constraintName == nil && (tableName != nil || message.hasPrefix("no partition of relation"))
    }
}
