import EngageCore
import Postgres

/// Reads CUPED's covariates: each device's notifications in the pre-experiment window, folded
/// per notification as the analysis folds them (device and category of the first event in event
/// order, presentation of the first `displayed`, flags from any event), summed per device by
/// PostgreSQL in one query. Only the events that occurred in the window count.
enum PrePeriodReader {
    static func read(_ definition: ExperimentDefinition, on connection: Connection) throws -> ExperimentCovariates? {
        guard let days = definition.analysis.cupedPrePeriodDays, let start = definition.startAt else { return nil }
        var covariates = ExperimentCovariates(days: days, before: start)
        let categories = Set(definition.categories)
        let rows = try connection.query(query(definition, covariates))
        for index in 0..<rows.rowCount {
            let row = rows[index]
            let category: String = try row.decode(1)
            guard categories.isEmpty || categories.contains(category) else { continue }
            var engaged = FunnelStageSet()
            for (column, stage) in [(4, FunnelStage.expanded), (5, .actioned), (6, .opened), (7, .dismissed), (8, .replied)]
            where try row.decode(column, as: Bool.self) {
                engaged.insert(stage)
            }
            let presentation = try row.decode(3, as: String?.self).flatMap(Presentation.init(rawValue:))
            let stages = FunnelStageSet(delivered: try row.decode(2), presentation: ObservedPresentation(presentation),
                                        engaged: engaged)
            covariates.add(device: try row.decode(0), reached: stages, count: try row.decode(9))
        }
        return covariates
    }

    /// Notifications of the window by device, category and what they reached, with their number.
    static func query(_ definition: ExperimentDefinition, _ covariates: ExperimentCovariates) -> SQL {
        """
        SELECT device_id, category, delivered, presentation, expanded, actioned, opened, dismissed, replied,
               count(*)::int8
        FROM (
            SELECT (array_agg(device_id ORDER BY occurred_at, event_id))[1] AS device_id,
                   (array_agg(category ORDER BY occurred_at, event_id))[1] AS category,
                   bool_or(type = 'delivered') AS delivered,
                   (array_agg(payload ->> 'presentation' ORDER BY occurred_at, event_id)
                        FILTER (WHERE type = 'displayed'))[1] AS presentation,
                   bool_or(type = 'expanded') AS expanded,
                   bool_or(type = 'action' AND payload ->> 'action_id' NOT IN
                           (\(ActionDetails.openIdentifier), \(ActionDetails.dismissIdentifier))) AS actioned,
                   bool_or(type = 'action' AND payload ->> 'action_id' = \(ActionDetails.openIdentifier)) AS opened,
                   bool_or(type = 'action' AND payload ->> 'action_id' = \(ActionDetails.dismissIdentifier)) AS dismissed,
                   bool_or(type = 'action' AND payload ->> 'text_input_length' IS NOT NULL) AS replied
            FROM events
            WHERE app_id = \(definition.appID)
              AND occurred_at >= \(covariates.from.postgres) AND occurred_at < \(covariates.to.postgres)
              AND type IN ('sent', 'delivered', 'displayed', 'expanded', 'action')
            GROUP BY notification_id
        ) AS notifications
        GROUP BY device_id, category, delivered, presentation, expanded, actioned, opened, dismissed, replied
        """
    }
}
