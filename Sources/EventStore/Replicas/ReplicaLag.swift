import Postgres

/// How far a hot standby's data may be behind its primary, measured on the standby alone (it
/// needs no connection to the primary, which may be the one that is down).
///
/// - A server not in recovery is a primary (a standby promoted since, or a read URL whose
///   `target_session_attrs=prefer-standby` found no standby): nothing is missing, zero.
/// - A standby whose WAL receiver is running and which has replayed up to the end of the primary's
///   WAL as the primary last reported it (`pg_stat_wal_receiver.latest_end_lsn`) is as recent as
///   the primary, less what is in flight: zero. (Not the time since the last replayed commit: on an
///   idle primary that grows although nothing is missing.) Compared with what the standby received
///   instead, a standby on a link slower than the primary's WAL, which replays all it gets, would
///   read as caught up while minutes behind. A role that may not see that column (it takes
///   `pg_read_all_stats`) gets the comparison with what was received, as before.
/// - Otherwise it holds everything committed up to its last replayed transaction, and perhaps
///   nothing after: the time since that transaction committed on the primary (by the primary's
///   clock; the machines' clocks should agree). Unknown (nil) when it has replayed no
///   transaction since it started.
public enum ReplicaLag {
    /// What the standby says of itself.
    struct Reading: Equatable {
        var inRecovery: Bool
        var receiverRunning: Bool
        /// Bytes of the primary's WAL, as last reported, not replayed yet (negative or 0 when
        /// replay reached it); nil when the role may not see it.
        var unreplayedOfPrimary: Double?
        /// Bytes received and not replayed yet (replay may be ahead after a restart).
        var unreplayedOfReceived: Double?
        var secondsSinceLastReplayedCommit: Double?
    }

    public static func measure(on connection: Connection) throws -> Duration? {
        let row = try connection.query("""
            SELECT pg_is_in_recovery(),
                   EXISTS (SELECT 1 FROM pg_stat_wal_receiver),
                   (SELECT pg_wal_lsn_diff(latest_end_lsn, pg_last_wal_replay_lsn())::float8 FROM pg_stat_wal_receiver),
                   pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::float8,
                   extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8
            """)[0]
        return lag(Reading(inRecovery: try row.decode(0), receiverRunning: try row.decode(1),
                           unreplayedOfPrimary: try row.decode(2, as: Double?.self),
                           unreplayedOfReceived: try row.decode(3, as: Double?.self),
                           secondsSinceLastReplayedCommit: try row.decode(4, as: Double?.self)))
    }

    static func lag(_ reading: Reading) -> Duration? {
        guard reading.inRecovery else { return .zero }
        if reading.receiverRunning, let unreplayed = reading.unreplayedOfPrimary ?? reading.unreplayedOfReceived, unreplayed <= 0 {
            return .zero
        }
        guard let seconds = reading.secondsSinceLastReplayedCommit, !seconds.isNaN else { return nil }
        return .milliseconds(Int64((min(max(0, seconds), 1e12) * 1000).rounded()))
    }
}
