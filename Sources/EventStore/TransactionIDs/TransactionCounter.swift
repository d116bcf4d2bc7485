import Postgres

/// The database's transaction counter, as the log's readers compare their positions with it.
///
/// Every transaction id a reader holds (a checkpoint, an experiment look's bound, the log's
/// newest event) was assigned by this database, so it is below the next id the database assigns:
/// the current snapshot's `xmax`. One that is not means the counter is behind the log
/// (`TransactionIDsBehindLog`), and a read after it would find nothing, silently, forever.
public enum TransactionCounter {
    /// What the database assigns next and the log's newest transaction id (nil for an empty log).
    public struct Reading: Sendable, Equatable {
        public var next: UInt64
        public var logNewest: UInt64?

        public init(next: UInt64, logNewest: UInt64?) {
            self.next = next
            self.logNewest = logNewest
        }

        /// Throws when the log's newest event has an id the database has not assigned yet.
        public func check() throws(TransactionIDsBehindLog) {
            if let logNewest { try TransactionCounter.check(logNewest, heldBy: .log, next: next) }
        }
    }

    /// Reads both in one statement. The newest id comes from the ends of the partitions'
    /// `(transaction_id, position)` indexes, a few pages whatever the log's size.
    public static func read(on connection: Connection) throws -> Reading {
        let row = try connection.query("""
            SELECT pg_snapshot_xmax(pg_current_snapshot()),
                   (SELECT transaction_id FROM events ORDER BY transaction_id DESC LIMIT 1)
            """)[0]
        return Reading(next: try row.decode(0), logNewest: try row.decode(1))
    }

    /// The next transaction id the database assigns.
    public static func next(on connection: Connection) throws -> UInt64 {
        try connection.query("SELECT pg_snapshot_xmax(pg_current_snapshot())")[0].decode(0)
    }

    /// Throws unless `held` is below `next`.
    public static func check(_ held: UInt64, heldBy holder: TransactionIDsBehindLog.Holder,
                             next: UInt64) throws(TransactionIDsBehindLog) {
        guard held >= next else { return }
        throw TransactionIDsBehindLog(holder: holder, held: held, next: next)
    }
}
