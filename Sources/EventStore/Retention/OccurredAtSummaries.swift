import Postgres

/// The summaries of the log's `occurred_at` BRIN index, one index per partition (migrations 015,
/// 020). Autosummarize is off: under sustained ingestion its requests flooded the server log and
/// cancelled the partition's vacuum. Vacuum summarizes full ranges when it runs; what it leaves
/// (a week that closed since, a restored week, the newest ranges) is summarized here by the
/// partition maintenance, so that CUPED's pre-period read skips those pages too.
public enum OccurredAtSummaries {
    /// What summarizing one partition's index came to.
    public enum Outcome: Sendable, Equatable {
        /// The ranges newly summarized (0 when none was left).
        case summarized(ranges: Int)
        /// Another session held the partition or its index (a vacuum, a prune, a second engage
        /// process summarizing): left for the next run rather than waited for.
        case busy
        /// The partition went (a prune dropped it) between the listing and its turn.
        case gone
    }

    /// The `occurred_at` index of every partition, in the order of the partitions' bounds.
    public static func indexes(on connection: Connection) throws -> [String] {
        try connection.query("""
            SELECT i.inhrelid::regclass::text
            FROM pg_inherits i
            JOIN pg_index x ON x.indexrelid = i.inhrelid
            JOIN event_partitions p ON p.name = x.indrelid::regclass::text
            WHERE i.inhparent = 'events_occurred_at'::regclass
            ORDER BY p.lower, p.name
            """).rows.map { try $0.decode(0) }
    }

    /// Summarizes every range of `index` that has no summary, the partial last one included,
    /// in a transaction of its own. Its locks (SHARE UPDATE EXCLUSIVE on the partition and the
    /// index) are waited for at most half of `deadlock_timeout`: a wait longer than that on an
    /// autovacuum worker cancels the worker's vacuum, which is what autosummarize did.
    public static func summarize(index: String, on connection: Connection) throws -> Outcome {
        do {
            return try connection.transaction { connection in
                _ = try connection.query("""
                    SELECT set_config('lock_timeout',
                        greatest(1, floor(extract(epoch FROM current_setting('deadlock_timeout')::interval) * 500))::int || 'ms', true)
                    """)
                guard try connection.query("SELECT to_regclass(\(index)) IS NOT NULL")[0].decode(0, as: Bool.self) else {
                    return .gone
                }
                return .summarized(ranges: try connection.query("SELECT brin_summarize_new_values(\(index)::regclass)")[0]
                    .decode(0, as: Int.self))
            }
        } catch let error as PostgresError where error.sqlState == BoundedLockWait.lockNotAvailable {
            return .busy
        } catch let error as PostgresError where error.sqlState == undefinedTable {
            return .gone
        }
    }

    /// Every partition's index, one after the other; what each came to, by index name.
    public static func summarizeAll(on connection: Connection) throws -> [(index: String, outcome: Outcome)] {
        try indexes(on: connection).map { index in (index, try summarize(index: index, on: connection)) }
    }

    /// SQLSTATE undefined_table: the partition was dropped after the index was looked up.
    static let undefinedTable = "42P01"
}
