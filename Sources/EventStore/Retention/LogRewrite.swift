import EngageCore
import Postgres

/// A prune or a restore under way (`log_rewrite`, migration 017): between its first change of the
/// log and the reset, after its last, of what readers folded from the log by position.
///
/// Such a command commits in many transactions, and a reader that folds the log incrementally
/// (the experiment tallies: only the events above a checkpoint) cannot see events leave or come
/// back below its checkpoint. The reset at the command's end makes the next fold start over, but
/// a fold that runs between the commits and that reset is not the log's. Readers check this row
/// before they fold and again where they publish (a look, in the transaction that stores its
/// analysis): a rewrite under way, or a generation other than the one they began with, means what
/// they folded may not be the log's.
///
/// A marker rather than holding the reset lock for the whole command: a prune of a year's weeks
/// runs for an hour at its pace, and every look (which holds that lock shared) would wait for it,
/// HTTP manual runs included; with the marker a look is deferred to the next poll instead, and
/// ingestion and the projector never read it.
public enum LogRewrite {
    public struct State: Sendable, Equatable {
        /// Raised by every begin.
        public var generation: Int64
        /// `prune` or `restore` while one is under way; nil otherwise.
        public var command: String?
        public var beganAt: Timestamp?

        public var isUnderWay: Bool { command != nil }
    }

    /// Drops what readers folded from the log by position (the experiments' incremental tallies),
    /// in the transaction that ends the rewrite; returns how many readers' state it dropped.
    public typealias Reset = @Sendable (Connection) throws -> Int

    public enum Command: String, Sendable {
        case prune, restore
    }

    /// Marks a rewrite under way, in a transaction of its own (call it outside one), committed
    /// before the command's first change of the log. A marker left by a command that died is
    /// taken over.
    @discardableResult
    public static func begin(_ command: Command, on connection: Connection) throws -> State {
        try state(connection.query("""
            UPDATE log_rewrite SET generation = generation + 1, command = \(command.rawValue), began_at = now()
            RETURNING generation, command, began_at
            """))
    }

    /// The advisory lock a prune or restore holds (on its session) for its whole run, from before
    /// `begin` to after `end`: one at a time per database. "engage-r" in ASCII; the migrator's
    /// lock is "engage".
    public static let commandLockKey: Int64 = 0x656E_6761_6765_2D72

    /// Runs `reset` and clears the marker in one transaction: a look that starts after it folds
    /// from nothing, one that started before it stores nothing. Returns what `reset` returned.
    @discardableResult
    public static func end(reset: Reset?, on connection: Connection) throws -> Int {
        try connection.transaction { connection in try finish(reset: reset, on: connection) }
    }

    /// Ends a rewrite whose command is gone (Ctrl-C, a lost connection, a killed process: none of
    /// them runs the command's own `end`), as that command would have: `reset`, then the marker
    /// cleared. The marker set while no prune or restore holds `commandLockKey` means the command
    /// died, since each holds it from before its `begin` until after its `end`. Otherwise every
    /// incremental look would be deferred until an operator thought of running another prune or
    /// restore. Returns whether there was such a rewrite. The lock is taken for the transaction
    /// only, so it cannot outlive it on a pooled connection.
    @discardableResult
    public static func endIfAbandoned(reset: @escaping Reset, on connection: Connection) throws -> Bool {
        try connection.transaction { connection in
            guard try state(on: connection).isUnderWay,
                  try connection.query("SELECT pg_try_advisory_xact_lock(\(commandLockKey))")[0].decode(0, as: Bool.self),
                  // Read again under the lock: a command may have ended between the two reads.
                  try state(on: connection).isUnderWay
            else { return false }
            _ = try finish(reset: reset, on: connection)
            return true
        }
    }

    private static func finish(reset: Reset?, on connection: Connection) throws -> Int {
        let dropped = try reset?(connection) ?? 0
        try connection.execute("UPDATE log_rewrite SET command = NULL, began_at = NULL")
        return dropped
    }

    /// The marker as the connection's statement sees it now.
    public static func state(on connection: Connection) throws -> State {
        try state(connection.query("SELECT generation, command, began_at FROM log_rewrite"))
    }

    private static func state(_ rows: QueryResult) throws -> State {
        guard rows.rowCount == 1 else {
            throw PostgresError(kind: .decoding, message: "log_rewrite: \(rows.rowCount) rows, expected 1 (migration 017)")
        }
        let row = rows[0]
        return State(generation: try row.decode(0), command: try row.decode(1),
                     beganAt: try row.decode(2, as: PostgresTimestamp?.self).map { Timestamp(microsecondsSinceEpoch: $0.unixMicroseconds) })
    }
}
