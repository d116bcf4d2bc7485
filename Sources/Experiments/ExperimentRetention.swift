import EngageCore
import Postgres

/// What running experiments still need from the log before its oldest weeks may be pruned.
public enum ExperimentRetention {
    /// Running experiments with events recorded before `cut`: tagged device events, which their
    /// analyses replay, or their own lifecycle entries. Pruning those would change what their
    /// next look sees.
    public static func runningExperiments(withEventsRecordedBefore cut: Timestamp, on connection: Connection) throws -> [String] {
        let before = cut.postgres
        return try connection.query("""
            SELECT x.id FROM experiments x
            WHERE x.status = 'running'
              AND (EXISTS (SELECT 1 FROM events e
                           WHERE e.app_id = x.app_id AND e.experiment_id = x.id AND e.recorded_at < \(before))
                   OR EXISTS (SELECT 1 FROM events e
                              WHERE e.app_id = x.app_id AND e.notification_id = 'experiment:' || x.id AND e.recorded_at < \(before)))
            ORDER BY x.id
            """).rows.map { try $0.decode(0, as: String.self) }
    }
}
