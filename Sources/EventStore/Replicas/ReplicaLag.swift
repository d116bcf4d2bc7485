import Postgres

/// How far a hot standby's data may be behind its primary, measured on the standby alone (it
/// needs no connection to the primary, which may be the one that is down).
///
/// - A server not in recovery is a primary (a standby promoted since, or a read URL whose
///   `target_session_attrs=prefer-standby` found no standby): nothing is missing, zero.
/// - A standby whose WAL receiver is running and which has replayed all the WAL it received
///   (replay can be ahead of what the receiver got since a restart, from WAL already on disk) is
///   as recent as the primary, less what is in flight on the network: zero. (Not the time since
///   the last replayed commit: on an idle primary that grows although nothing is missing.)
/// - Otherwise it holds everything committed up to its last replayed transaction, and perhaps
///   nothing after: the time since that transaction committed on the primary (by the primary's
///   clock; the machines' clocks should agree). Unknown (nil) when it has replayed no
///   transaction since it started.
public enum ReplicaLag {
    public static func measure(on connection: Connection) throws -> Duration? {
        let row = try connection.query("""
            SELECT pg_is_in_recovery(),
                   coalesce(pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(), false)
                       AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver),
                   extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8
            """)[0]
        guard try row.decode(0, as: Bool.self) else { return .zero }
        if try row.decode(1, as: Bool.self) { return .zero }
        guard let seconds = try row.decode(2, as: Double?.self) else { return nil }
        return .milliseconds(Int64((max(0, seconds) * 1000).rounded()))
    }
}
