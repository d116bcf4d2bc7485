/// The database's transaction counter is behind the log: the log, or a reader's checkpoint in it,
/// holds a transaction id the database has not assigned yet.
///
/// It happens when a database is moved with pg_dump and pg_restore (or psql) into a new cluster:
/// the rows keep their `transaction_id`s and the checkpoints theirs, while the new cluster counts
/// transactions from where initdb and the restore left it. Every event appended there gets an id
/// below what readers have already read past, so the projector and the incremental looks would
/// fold nothing new, forever. pg_upgrade, a standby's promotion and a restore of a base backup
/// keep the counter and never get here. Readers raise this instead of reading nothing; the repair
/// is in docs/reliability.md, "Transaction ids behind the log".
///
/// `description` holds transaction ids and advice only, safe to log and to show.
public struct TransactionIDsBehindLog: Error, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What holds the id the database has not reached.
    public enum Holder: String, Sendable, Equatable {
        /// The log's newest event.
        case log = "the newest event in the log"
        /// A reader's position in the log (the projector's checkpoint).
        case checkpoint = "a reader's checkpoint in the log"
        /// An experiment's incremental look (its tallies are folded below a transaction id).
        case experimentLook = "an experiment's incremental look"
    }

    /// Stable, for problem documents and scripts.
    public static let code = "transaction-ids-behind-log"

    public var holder: Holder
    /// The highest transaction id the holder has: the newest event's, or the last one read past.
    public var held: UInt64
    /// The next transaction id the database assigns (its current snapshot's `xmax`).
    public var next: UInt64

    public init(holder: Holder, held: UInt64, next: UInt64) {
        self.holder = holder
        self.held = held
        self.next = next
    }

    /// The epoch to give the database's counter (`pg_resetwal -e`) so that its next id is above
    /// `held`; `TransactionIDRepair` takes the highest over the log and every reader.
    public var repairEpoch: UInt32 { TransactionIDRepair.epoch(above: held) }

    public var description: String {
        "PostgreSQL's transaction ids are behind the event log: \(holder.rawValue) is at transaction \(held), "
            + "the database's next is \(next). The database was probably restored from a dump (pg_dump) into a new "
            + "cluster; events appended now would sort before what readers have read and never be counted. "
            + "Stop appending, and move the database's counter past the log with pg_resetwal: engage db transaction-ids "
            + "prints the command (docs/reliability.md, \"Transaction ids behind the log\")."
    }

    public var debugDescription: String {
        "TransactionIDsBehindLog(holder: \(holder), held: \(held), next: \(next), repair epoch: \(repairEpoch))"
    }
}
