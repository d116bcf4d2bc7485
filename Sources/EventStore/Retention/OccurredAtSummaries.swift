import Postgres

/// The summaries of the log's `occurred_at` BRIN index, one index per partition (migrations 015,
/// 020). Autosummarize is off: under sustained ingestion its requests flooded the server log and
/// cancelled the partition's vacuum. Vacuum summarizes full ranges when it runs; what it leaves
/// (a week that closed since, a restored week, the newest ranges) is summarized here by the
/// partition maintenance, so that CUPED's pre-period read skips those pages too. Each step
/// summarizes the `recorded_at` index over the same blocks (migration 022), which the open week's
/// partition, not vacuumed for its inserts (migration 021), otherwise leaves without summaries.
///
/// A partition is summarized in steps (`engage_summarize_occurred_at`), each a transaction of
/// about `stepBudget` that stops between two ranges: a summarization stopped inside a range
/// leaves a placeholder that nothing replaces later, and a short step holds the partition's lock
/// (which makes autovacuum skip it and a prune's detach wait) and a pooled connection briefly.
public enum OccurredAtSummaries {
    /// What summarizing one partition came to.
    public enum Outcome: Sendable, Equatable {
        /// Every range has a summary; `ranges` were made now (0 when none was missing).
        case summarized(ranges: Int)
        /// Another session held the partition (a vacuum, a prune, a second engage process
        /// summarizing) after `ranges` were made: the rest is left for the next run rather than
        /// waited for.
        case busy(ranges: Int)
        /// The partition went (a prune dropped it) since it was listed.
        case gone
    }

    /// What one step came to.
    public enum Step: Sendable, Equatable {
        /// `ranges` summarized; `next` is the heap block to go on from, nil at the partition's end.
        case summarized(ranges: Int, next: Int64?)
        case busy
        case gone
    }

    /// How long one step goes on summarizing before it stops at the next range's start.
    public static let stepBudget = Duration.seconds(2)

    /// Runs `runStep` from the partition's first block until a step reaches its end, is refused
    /// its lock, or finds the partition gone; `runStep` may take a connection of its own each time.
    public static func summarize(steppingWith runStep: (_ fromBlock: Int64) async throws -> Step) async throws -> Outcome {
        var ranges = 0
        var fromBlock: Int64 = 0
        while true {
            try Task.checkCancellation()
            switch try await runStep(fromBlock) {
            case .summarized(let count, let next):
                ranges += count
                guard let next else { return .summarized(ranges: ranges) }
                fromBlock = next
            case .busy: return .busy(ranges: ranges)
            case .gone: return .gone
            }
        }
    }

    /// Every step of `partition` on one connection.
    public static func summarize(partition: String, budget: Duration = stepBudget, lockWait: Duration? = nil,
                                 on connection: Connection) async throws -> Outcome {
        try await summarize { fromBlock in
            try step(partition: partition, from: fromBlock, budget: budget, lockWait: lockWait, on: connection)
        }
    }

    /// One step: the ranges of `partition` without a summary from `block` on, for about `budget`
    /// (one range at least), in a transaction of its own. Its lock (SHARE UPDATE EXCLUSIVE on the
    /// partition) is waited for at most `lockWait`, by default half of `deadlock_timeout`: a wait
    /// longer than that on an autovacuum worker cancels the worker's vacuum, which is what
    /// autosummarize did. Tests wait longer to see a prune's drop finish during the wait.
    public static func step(partition: String, from block: Int64, budget: Duration = stepBudget, lockWait: Duration? = nil,
                            on connection: Connection) throws -> Step {
        do {
            return try connection.transaction { connection in
                // Past the partition's lock nothing may stop the step but its own budget: a
                // statement ended inside a range leaves its placeholder (the function turns
                // lock_timeout off once it has the partition).
                _ = try connection.query("SELECT set_config('statement_timeout', '0', true)")
                if let lockWait {
                    _ = try connection.query("SELECT set_config('lock_timeout', \(String(BoundedLockWait.milliseconds(lockWait)) + "ms"), true)")
                } else {
                    try BoundedLockWait.boundLockWaitsBelowVacuumCancellation(on: connection)
                }
                let row = try connection.query("""
                    SELECT summarized, next_block
                    FROM engage_summarize_occurred_at(\(partition), \(block), \(String(BoundedLockWait.milliseconds(budget)) + " milliseconds")::interval)
                    """)[0]
                return .summarized(ranges: try row.decode(0, as: Int.self), next: try row.decode(1, as: Int64?.self))
            }
        } catch let error as PostgresError where error.sqlState == BoundedLockWait.lockNotAvailable {
            return .busy
        } catch let error as PostgresError where error.sqlState == undefinedTable {
            // The partition dropped since it was listed; if it is still there, what is missing
            // is the log's partitioned index `events_occurred_at`, which is no prune's doing.
            let stillThere = (try? connection.query("SELECT to_regclass(quote_ident(\(partition))) IS NOT NULL")[0].decode(0, as: Bool.self)) ?? true
            if stillThere { throw error }
            return .gone
        }
    }

    /// SQLSTATE undefined_table: the partition was dropped after it was listed.
    static let undefinedTable = "42P01"
}
