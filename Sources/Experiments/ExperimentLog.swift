import EngageCore
import Postgres

/// Appends experiment entries to the event log and reads an experiment's entries back.
///
/// An entry is appended inside the transaction that makes the change it records (the status
/// update, the stored run), so the log and the tables beside it never disagree. Its event id is
/// new and random: an entry records a change that happened once, never a retried request.
public enum ExperimentLog {
    /// Inside an open transaction.
    public static func append(_ entry: ExperimentLogEntry, on connection: Connection) throws {
        // Its id joins the log's idempotency key like every appended event's (migration 010).
        try connection.execute("""
            WITH id AS (INSERT INTO event_ids (event_id) VALUES (gen_random_uuid()) RETURNING event_id)
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
            SELECT event_id, \(entry.appID), \(entry.streamID), \(entry.type), '', '', \(entry.occurredAt.postgres),
                   \(PostgresJSONB(entry.payload))
            FROM id
            """)
    }

    /// One logged entry as read back.
    public struct StoredEntry: Sendable, Equatable {
        public var action: ExperimentLogEntry.Action
        public var occurredAt: Timestamp
        public var recordedAt: Timestamp
        /// As PostgreSQL renders the jsonb payload.
        public var payload: [UInt8]
    }

    /// The experiment's entries in log order.
    public static func entries(experimentID: String, appID: String, on connection: Connection) throws -> [StoredEntry] {
        let rows = try connection.query("""
            SELECT type, occurred_at, recorded_at, payload FROM events
            WHERE app_id = \(appID) AND notification_id = \(ExperimentLogEntry.streamID(experimentID: experimentID))
            ORDER BY transaction_id, position
            """)
        return try rows.rows.compactMap { row in
            guard let action = ExperimentLogEntry.action(ofType: try row.decode(0)) else { return nil }
            return StoredEntry(action: action, occurredAt: try row.timestamp(1), recordedAt: try row.timestamp(2),
                               payload: try row.decode(3, as: PostgresJSONB.self).json)
        }
    }
}
