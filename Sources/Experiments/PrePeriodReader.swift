import EngageCore
import Postgres

/// Reads CUPED's covariates: each device's notifications in the pre-experiment window, folded
/// per notification as the analysis folds them (device and category of the first event in event
/// order, presentation of the first `displayed`, flags from any event), summed per device by
/// PostgreSQL in one query. Only the events that occurred in the window count.
///
/// "First in event order" needs each notification's events sorted, which made this read cost
/// more than the experiment's own replay (issue 15 point 7). The query avoids those sorts: it
/// extracts each event's one payload field once, into a bit of a small integer, and takes a
/// notification's device, category and presentation as the least of its values, which is the
/// first event's whenever its events agree, as every client's do. The notifications whose events
/// disagree (none, unless a client misbehaves) are folded in event order by the sorting
/// aggregates in the same statement, so the covariates stay exactly those of the fold.
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
            let bits: Int = try row.decode(2)
            var engaged = FunnelStageSet()
            for (bit, stage) in engagedBits where bits & bit != 0 { engaged.insert(stage) }
            let presentation = try row.decode(3, as: String?.self).flatMap(Presentation.init(rawValue:))
            let stages = FunnelStageSet(delivered: bits & deliveredBit != 0, presentation: ObservedPresentation(presentation),
                                        engaged: engaged)
            covariates.add(device: try row.decode(0), reached: stages, count: try row.decode(4))
        }
        return covariates
    }

    /// The bits of the query's `stages` column.
    static let deliveredBit = 1
    static let engagedBits: [(Int, FunnelStage)] = [(2, .expanded), (4, .opened), (8, .dismissed), (16, .actioned), (32, .replied)]

    /// Notifications of the window by device, category, stages (bits) and presentation, with
    /// their number (a group may come twice: from the agreeing notifications and from the others).
    static func query(_ definition: ExperimentDefinition, _ covariates: ExperimentCovariates) -> SQL {
        """
        WITH notifications AS MATERIALIZED (
            SELECT notification_id,
                   min(device_id) = max(device_id) AND min(category) = max(category)
                       AND min(presentation) IS NOT DISTINCT FROM max(presentation) AS agreeing,
                   min(device_id) AS device_id, min(category) AS category, bit_or(stages) AS stages,
                   min(presentation) AS presentation
            FROM (
                SELECT notification_id, device_id, category,
                       CASE type WHEN 'delivered' THEN 1 WHEN 'expanded' THEN 2
                                 WHEN 'action' THEN CASE WHEN detail IS NULL THEN 0
                                                         WHEN detail = \(ActionDetails.openIdentifier) THEN 4
                                                         WHEN detail = \(ActionDetails.dismissIdentifier) THEN 8
                                                         ELSE 16 END
                                                    | CASE WHEN replied THEN 32 ELSE 0 END
                                 ELSE 0 END AS stages,
                       CASE WHEN type = 'displayed' THEN detail END AS presentation
                FROM (
                    SELECT notification_id, device_id, category, type,
                           CASE type WHEN 'displayed' THEN payload ->> 'presentation'
                                     WHEN 'action' THEN payload ->> 'action_id' END AS detail,
                           type = 'action' AND payload ->> 'text_input_length' IS NOT NULL AS replied
                    FROM events
                    WHERE \(fragment: window(definition, covariates))
                ) AS window_rows
            ) AS window_events
            GROUP BY notification_id
        )
        SELECT device_id, category, stages, presentation, count(*)::int8
        FROM notifications
        WHERE agreeing
        GROUP BY device_id, category, stages, presentation
        UNION ALL
        SELECT device_id, category, stages, presentation, count(*)::int8
        FROM (
            SELECT (array_agg(e.device_id ORDER BY e.occurred_at, e.event_id))[1] AS device_id,
                   (array_agg(e.category ORDER BY e.occurred_at, e.event_id))[1] AS category,
                   n.stages,
                   (array_agg(e.payload ->> 'presentation' ORDER BY e.occurred_at, e.event_id)
                        FILTER (WHERE e.type = 'displayed'))[1] AS presentation
            FROM notifications AS n JOIN events AS e USING (notification_id)
            WHERE NOT n.agreeing AND \(fragment: window(definition, covariates))
            GROUP BY n.notification_id, n.stages
        ) AS disagreeing
        GROUP BY device_id, category, stages, presentation
        """
    }

    /// The events of the window that a fold reads.
    private static func window(_ definition: ExperimentDefinition, _ covariates: ExperimentCovariates) -> SQL {
        """
        app_id = \(definition.appID)
        AND occurred_at >= \(covariates.from.postgres) AND occurred_at < \(covariates.to.postgres)
        AND type IN ('sent', 'delivered', 'displayed', 'expanded', 'action')
        """
    }
}
