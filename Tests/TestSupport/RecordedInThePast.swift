import EngageCore
import Postgres

/// Makes events look recorded days ago: they move to noon (UTC) of that day, into its partition
/// of the log, keeping their place in the log (position and transaction id). For tests of what
/// happens to old days (engage log prune).
public enum RecordedInThePast {
    public static func move(_ ids: [EventID], daysAgo: Int, pool: ConnectionPool) async throws {
        let ids = ids.map(\.description)
        try await pool.withConnection { connection in
            try connection.execute("SELECT engage_ensure_event_partition((now() AT TIME ZONE 'UTC')::date - \(daysAgo)::int)")
            try connection.execute("""
                UPDATE events
                SET recorded_at = ((now() AT TIME ZONE 'UTC')::date - \(daysAgo)::int)::timestamp AT TIME ZONE 'UTC' + interval '12 hours'
                WHERE event_id = ANY(\(ids)::uuid[])
                """)
        }
    }
}
