import EngageCore
import Postgres

/// What `engage log prune` removed from the log, one row per UTC day (`log_pruned_days`,
/// migration 010): a rebuild of the read models reads it to know that the log no longer holds
/// those days, and `engage log restore` marks the days it loads back.
public enum PrunedDays {
    public struct Day: Sendable, Equatable {
        /// Midnight UTC that starts the day.
        public var day: Timestamp
        public var events: Int
        public var prunedAt: Timestamp
        /// The archive file the day went to, and its SHA-256 (hex); nil without --archive.
        public var archiveFile: String?
        public var archiveSHA256: String?
        public var restoredAt: Timestamp?
        /// When a rebuild of the read models ran without the day; cleared by the first rebuild
        /// after the day is restored, which counts it again.
        public var rebuiltWithoutAt: Timestamp?
    }

    /// Records that the day is being pruned (before its events go, so that a prune cut short
    /// never leaves a day missing unrecorded); a day pruned again after a restore is recorded anew.
    /// A day still missing keeps its first record: a prune cut short and run again (into another
    /// archive) finds only what the first left, and its record would let a restore of that part
    /// mark the whole day restored, while the rest of it is in the first archive only.
    public static func record(day: Timestamp, events: Int, archiveFile: String?, archiveSHA256: String?,
                              on connection: Connection) throws {
        try connection.execute("""
            INSERT INTO log_pruned_days (day, events, archive_file, archive_sha256)
            VALUES ((\(Self.value(day)) AT TIME ZONE 'UTC')::date, \(events), \(archiveFile), \(archiveSHA256))
            ON CONFLICT (day) DO UPDATE SET
                events = EXCLUDED.events, pruned_at = now(), archive_file = EXCLUDED.archive_file,
                archive_sha256 = EXCLUDED.archive_sha256, restored_at = NULL, rebuilt_without_at = NULL
            WHERE log_pruned_days.restored_at IS NOT NULL
            """)
    }

    /// Marks the day restored when it was pruned into the archive file with this checksum, or when
    /// the restore put back at least as many of its events as its last prune removed (an earlier
    /// archive of the day: a day's events only ever come back from its archives, so its first
    /// archive holds every event a later prune of it can remove); returns the day's record as it
    /// was before (nil if the day was never pruned here) and whether it is marked now.
    @discardableResult
    public static func markRestored(day: Timestamp, archiveSHA256: String, eventsInLog: Int,
                                    on connection: Connection) throws -> (before: Day?, marked: Bool) {
        let before = try all(on: connection).first { $0.day == day }
        let marked = try connection.query("""
            UPDATE log_pruned_days SET restored_at = now()
            WHERE day = (\(Self.value(day)) AT TIME ZONE 'UTC')::date
              AND (archive_sha256 = \(archiveSHA256) OR events <= \(eventsInLog))
            RETURNING day
            """).rows.isEmpty == false
        return (before, marked)
    }

    /// Days whose events the log no longer holds: pruned and not restored since.
    public static func missing(on connection: Connection) throws -> [Day] {
        try all(on: connection).filter { $0.restoredAt == nil }
    }

    /// Records that the read models were rebuilt without the days missing now.
    public static func markRebuiltWithout(on connection: Connection) throws {
        try connection.execute("UPDATE log_pruned_days SET rebuilt_without_at = now() WHERE restored_at IS NULL")
    }

    /// Records that the read models were rebuilt with these days, restored before the rebuild
    /// began (as `all` read them then): a restore of one of them again no longer says a rebuild
    /// would count it. A day restored since (its `restored_at` changed) keeps its mark.
    public static func markRebuiltWith(_ restored: [Day], on connection: Connection) throws {
        for day in restored {
            guard let restoredAt = day.restoredAt, day.rebuiltWithoutAt != nil else { continue }
            try connection.execute("""
                UPDATE log_pruned_days SET rebuilt_without_at = NULL
                WHERE day = (\(Self.value(day.day)) AT TIME ZONE 'UTC')::date AND restored_at = \(Self.value(restoredAt))
                """)
        }
    }

    /// Every recorded day, oldest first.
    public static func all(on connection: Connection) throws -> [Day] {
        try connection.query("""
            SELECT day::timestamp AT TIME ZONE 'UTC', events, pruned_at, archive_file, archive_sha256, restored_at, rebuilt_without_at
            FROM log_pruned_days ORDER BY day
            """).rows.map { row in
            func time(_ column: Int) throws -> Timestamp? {
                try row.decode(column, as: PostgresTimestamp?.self).map { Timestamp(microsecondsSinceEpoch: $0.unixMicroseconds) }
            }
            let day = try row.decode(0, as: PostgresTimestamp.self), prunedAt = try row.decode(2, as: PostgresTimestamp.self)
            return Day(day: Timestamp(microsecondsSinceEpoch: day.unixMicroseconds), events: try row.decode(1),
                       prunedAt: Timestamp(microsecondsSinceEpoch: prunedAt.unixMicroseconds), archiveFile: try row.decode(3),
                       archiveSHA256: try row.decode(4), restoredAt: try time(5), rebuiltWithoutAt: try time(6))
        }
    }

    static func value(_ timestamp: Timestamp) -> PostgresTimestamp {
        PostgresTimestamp(unixMicroseconds: timestamp.microsecondsSinceEpoch)
    }
}
