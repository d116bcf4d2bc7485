import EngageCore
import Postgres

/// What running experiments still need from the log before its oldest weeks may be pruned.
public enum ExperimentRetention {
    /// Running experiments with events recorded before `cut` that their analyses read: tagged
    /// device events, which they replay, their own lifecycle entries, or the app's events that
    /// occurred in their CUPED pre-period (the days before the start, read at every look).
    /// Pruning those would change what their next look sees.
    public static func runningExperiments(withEventsRecordedBefore cut: Timestamp, on connection: Connection) throws -> [String] {
        let before = cut.postgres
        let replayed = try connection.query("""
            SELECT x.id FROM experiments x
            WHERE x.status = 'running'
              AND (EXISTS (SELECT 1 FROM events e
                           WHERE e.app_id = x.app_id AND e.experiment_id = x.id AND e.recorded_at < \(before))
                   OR EXISTS (SELECT 1 FROM events e
                              WHERE e.app_id = x.app_id AND e.notification_id = 'experiment:' || x.id AND e.recorded_at < \(before)))
            """).rows.map { try $0.decode(0, as: String.self) }
        var needing = Set(replayed)
        // A definition this engage cannot read (written by another version) has its tagged events
        // checked above; it does not hold back every prune.
        let running = try connection.query("SELECT definition, created_at, updated_at FROM experiments WHERE status = 'running'")
            .rows.compactMap { try? ExperimentStore.record($0).definition }
        for definition in running where !needing.contains(definition.id) {
            // An experiment started after the cut has no tagged events before it, but its
            // pre-period may reach back past it (14 days by default, up to 366).
            guard let days = definition.analysis.cupedPrePeriodDays, let start = definition.startAt else { continue }
            let window = ExperimentCovariates(days: days, before: start)
            // An event may have been recorded before it occurred (a device clock ahead, up to
            // `--max-future-minutes`): a pre-period that begins a little after the cut may still
            // hold events recorded before it.
            let lead = EventLimits.largestMaxFuture + IdempotencyWindow.clockMargin
            guard window.from < cut.adding(microseconds: lead.components.seconds * 1_000_000) else { continue }
            let found = try connection.query("""
                SELECT EXISTS (SELECT 1 FROM events
                               WHERE app_id = \(definition.appID) AND recorded_at < \(before)
                                 AND occurred_at >= \(window.from.postgres) AND occurred_at < \(window.to.postgres))
                """)[0].decode(0, as: Bool.self)
            if found { needing.insert(definition.id) }
        }
        return needing.sorted()
    }
}
