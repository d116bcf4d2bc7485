import EventStore
import Postgres
import Projections

/// The engagement read model as sorted text rows, and whether its projector has caught up: for
/// comparing a model kept up incrementally (through crashes, takeovers) with a rebuild.
public enum ReadModelSnapshot {
    /// Every row of every read-model table, sorted, prefixed with its table's name.
    public static func rows(_ pool: ConnectionPool) async throws -> [String] {
        try await pool.withConnection { connection in
            var lines: [String] = []
            for (table, order) in [("engagement_daily", "app_id, category, presentation, attachment_kind, day"),
                                   ("engagement_actions_daily", "app_id, category, presentation, attachment_kind, day, action_id"),
                                   ("extension_telemetry_daily", "app_id, category, attachment_kind, day"),
                                   ("notification_states", "app_id, notification_id"),
                                   ("engagement_devices", "app_id, category, device_id"),
                                   ("engagement_device_moments", "app_id, category"),
                                   ("engagement_device_pair_moments", "app_id, first_category, second_category")] {
                let rows = try connection.query(SQL(unsafeSQL: "SELECT t::text FROM \(table) t ORDER BY \(order)"))
                for row in rows.rows { lines.append(table + " " + (try row.decode(0, as: String.self))) }
            }
            return lines
        }
    }

    /// True when the projector's checkpoint has reached the last event stored. (Not the readable
    /// head: other tests' transactions in the same cluster can hold that horizon back a while.)
    public static func isCaughtUp(_ pool: ConnectionPool) async throws -> Bool {
        try await pool.withConnection { connection in
            let rows = try connection.query("SELECT transaction_id, position FROM events ORDER BY transaction_id DESC, position DESC LIMIT 1")
            guard let row = rows.rows.first else { return true }
            let head = LogPosition(transactionID: try row.decode(0), sequence: try row.decode(1))
            return try EngagementStore.checkpoint(EngagementStore.projectionName, on: connection) >= head
        }
    }
}
