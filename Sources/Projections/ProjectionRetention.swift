import EngageCore
import EventStore
import Postgres

/// What the read models still need from the log before its oldest weeks may be pruned.
public enum ProjectionRetention {
    /// A read model whose checkpoint has not passed every event recorded before a cut.
    public struct Behind: Sendable, Equatable {
        public var projection: String
        public var checkpoint: LogPosition
        /// A rebuild's own checkpoint (`engagement:rebuild`): the rebuild is still replaying.
        public var isRebuild: Bool { projection.hasSuffix(":rebuild") }
    }

    /// Every projection that has not folded all the events recorded before `cut`. A projection
    /// that never ran has no checkpoint and is not listed: it will start from the oldest event kept.
    /// Nor is a rebuild's checkpoint while no rebuild runs: a rebuild's process that died left it,
    /// and the next rebuild replays from the oldest event kept.
    public static func behind(recordedBefore cut: Timestamp, on connection: Connection) throws -> [Behind] {
        let behind = try connection.query("""
            SELECT c.projection, c.transaction_id, c.position
            FROM projection_checkpoints c
            WHERE EXISTS (
                SELECT 1 FROM events e
                WHERE e.recorded_at < \(PostgresTimestamp(unixMicroseconds: cut.microsecondsSinceEpoch))
                  AND (e.transaction_id, e.position) > (c.transaction_id, c.position))
            ORDER BY c.projection
            """).rows.map { row in
            Behind(projection: try row.decode(0),
                   checkpoint: LogPosition(transactionID: try row.decode(1), sequence: try row.decode(2)))
        }
        guard behind.contains(where: \.isRebuild), try !EngagementRebuild.isRunning(on: connection) else { return behind }
        return behind.filter { !$0.isRebuild }
    }
}
