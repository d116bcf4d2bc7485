import EventStore
import Postgres

/// The database's transaction counter against every transaction id the log and its readers hold:
/// the log's newest event, the projections' checkpoints and the incremental looks' bounds. Read
/// by `/readyz`, `/metrics` (`engage_postgres_transaction_ids_behind_log`), the start of the
/// commands that append or fold, and `engage db transaction-ids`, which prints the repair.
public struct TransactionIDHealth: Sendable, Equatable {
    /// The next transaction id the database assigns.
    public var next: UInt64
    public var logNewest: UInt64?
    public var projectionCheckpoint: UInt64?
    /// The highest bound an experiment's tallies were folded below (exclusive).
    public var lookFoldedBelow: UInt64?

    public init(next: UInt64, logNewest: UInt64?, projectionCheckpoint: UInt64?, lookFoldedBelow: UInt64?) {
        self.next = next
        self.logNewest = logNewest
        self.projectionCheckpoint = projectionCheckpoint
        self.lookFoldedBelow = lookFoldedBelow
    }

    /// One statement, so one snapshot and one round trip (`/readyz` answers probes under a time
    /// limit): every id it sees held by the log or a reader was assigned before the snapshot, so
    /// below its `xmax` unless the counter is behind. The tables are the projections' and the
    /// looks' (EventStore cannot name them); each reads a few index or heap pages.
    public static func read(on connection: Connection) throws -> TransactionIDHealth {
        let row = try connection.query("""
            SELECT pg_snapshot_xmax(pg_current_snapshot()),
                   (SELECT transaction_id FROM events ORDER BY transaction_id DESC LIMIT 1),
                   (SELECT max(transaction_id) FROM projection_checkpoints),
                   (SELECT max(folded_below) FROM experiment_tally_checkpoints)
            """)[0]
        return TransactionIDHealth(next: try row.decode(0), logNewest: try row.decode(1), projectionCheckpoint: try row.decode(2),
                                   lookFoldedBelow: try row.decode(3))
    }

    /// The highest id each holder has (a look's bound is exclusive, so the id below it).
    var held: [(holder: TransactionIDsBehindLog.Holder, id: UInt64)] {
        var held: [(holder: TransactionIDsBehindLog.Holder, id: UInt64)] = []
        if let logNewest { held.append((.log, logNewest)) }
        if let projectionCheckpoint { held.append((.checkpoint, projectionCheckpoint)) }
        if let lookFoldedBelow, lookFoldedBelow > 0 { held.append((.experimentLook, lookFoldedBelow - 1)) }
        return held
    }

    /// The holder furthest ahead of the counter, when one is at or above it.
    public var problem: TransactionIDsBehindLog? {
        guard let furthest = held.max(by: { $0.id < $1.id }), furthest.id >= next else { return nil }
        return TransactionIDsBehindLog(holder: furthest.holder, held: furthest.id, next: next)
    }

    public func check() throws(TransactionIDsBehindLog) {
        if let problem { throw problem }
    }

    /// The repair: the counter moved past the highest id held by anyone.
    public var repair: TransactionIDRepair {
        TransactionIDRepair(highest: held.map(\.id).max() ?? 0, next: next)
    }
}
