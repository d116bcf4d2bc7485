import Postgres

/// The database's transaction counter, as the log's readers compare their positions with it.
///
/// Every transaction id a reader holds (a checkpoint, an experiment look's bound, the log's
/// newest event) was assigned by this database, so it is below the next id the database assigns:
/// the current snapshot's `xmax`. One that is not means the counter is behind the log
/// (`TransactionIDsBehindLog`), and a read after it would find nothing, silently, forever.
public enum TransactionCounter {
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
