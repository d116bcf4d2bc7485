import EngageCore
import Postgres

/// Reads CUPED's covariates: each device's notifications in the pre-experiment window, folded
/// per notification as the analysis folds them (device and category of the first event in event
/// order, presentation of the first `displayed`, flags from any event), summed per device by
/// PostgreSQL. Only the events that occurred in the window count.
///
/// "First in event order" needs each notification's events sorted, which made this read cost
/// more than the experiment's own replay (issue 15 point 7). The grouping query avoids those
/// sorts: it extracts each event's one payload field once, into a bit of a small integer, and
/// takes a notification's device, category and presentation as the least of its values, which is
/// the first event's whenever its events agree, as every client's do. It names the notifications
/// whose events disagree (none, unless a client misbehaves) instead of counting them, and a
/// second statement, run only when there are some, folds just those in event order, so the
/// covariates stay exactly those of the fold.
///
/// The grouping holds every notification of the window in one hash table (about 450 bytes each),
/// so the transaction lets it have the memory (`groupingMemory`) rather than spill to disk, and
/// turns off JIT compilation (about a second of compiling at every look, for a query that runs
/// once) and parallel workers (whose partial groups would not shrink, each notification's events
/// being spread over the workers, and which would compete with the replay read at the same time).
enum PrePeriodReader {
    static func read(_ definition: ExperimentDefinition, on connection: Connection) throws -> ExperimentCovariates? {
        guard let days = definition.analysis.cupedPrePeriodDays, let start = definition.startAt else { return nil }
        var covariates = ExperimentCovariates(days: days, before: start)
        let categories = Set(definition.categories)
        func add(_ rows: QueryResult, disagreeing: inout [String]) throws {
            for index in 0..<rows.rowCount {
                let row = rows[index]
                if let notification = try row.decode(4, as: String?.self) {
                    disagreeing.append(notification)
                    continue
                }
                let category: String = try row.decode(1)
                guard categories.isEmpty || categories.contains(category) else { continue }
                covariates.add(device: try row.decode(0), reached: stages(bits: try row.decode(2), presentation: try row.decode(3)),
                               count: try row.decode(5))
            }
        }
        // One snapshot for both statements: a disagreeing notification is folded from the same events.
        try connection.transaction(isolation: .repeatableRead) { connection in
            try configureTransaction(on: connection)
            var disagreeing: [String] = []
            try add(try connection.query(query(definition, covariates)), disagreeing: &disagreeing)
            guard !disagreeing.isEmpty else { return }
            var none: [String] = []
            try add(try connection.query(orderedQuery(definition, covariates, notifications: disagreeing)), disagreeing: &none)
        }
        return covariates
    }

    /// What the grouping of the window's notifications may hold in memory at least (PostgreSQL's
    /// `work_mem`; a hash table may use `hash_mem_multiplier` times it, 2 by default): about a
    /// million notifications, beyond which it spills to disk in batches and slows down.
    static let groupingMemory = "256MB"

    /// The transaction's settings: no JIT, no parallel workers, and `work_mem` raised to
    /// `groupingMemory` unless the server's (or the role's) is already higher: never lowered.
    static func configureTransaction(on connection: Connection) throws {
        _ = try connection.query("""
            SELECT set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true),
                   set_config('work_mem', CASE WHEN pg_size_bytes(current_setting('work_mem')) >= pg_size_bytes(\(groupingMemory))
                                               THEN current_setting('work_mem') ELSE \(groupingMemory) END, true)
            """)
    }

    /// The bits of the queries' `stages` column.
    static let deliveredBit = 1
    static let engagedBits: [(Int, FunnelStage)] = [(2, .expanded), (4, .opened), (8, .dismissed), (16, .actioned), (32, .replied)]

    static func stages(bits: Int, presentation: String?) -> FunnelStageSet {
        var engaged = FunnelStageSet()
        for (bit, stage) in engagedBits where bits & bit != 0 { engaged.insert(stage) }
        return FunnelStageSet(delivered: bits & deliveredBit != 0,
                              presentation: ObservedPresentation(presentation.flatMap(Presentation.init(rawValue:))),
                              engaged: engaged)
    }

    /// Notifications of the window by device, category, stages (bits) and presentation, with
    /// their number; a notification whose events disagree on the device, the category or the
    /// presentation comes alone, named in the fifth column.
    static func query(_ definition: ExperimentDefinition, _ covariates: ExperimentCovariates) -> SQL {
        """
        SELECT device_id, category, stages, presentation, CASE WHEN NOT agreeing THEN notification_id END, count(*)::int8
        FROM (
            SELECT notification_id,
                   min(device_id) = max(device_id) AND min(category) = max(category)
                       AND min(presentation) IS NOT DISTINCT FROM max(presentation) AS agreeing,
                   min(device_id) AS device_id, min(category) AS category, bit_or(stages) AS stages,
                   min(presentation) AS presentation
            FROM (\(fragment: windowEvents(definition, covariates))) AS window_events
            GROUP BY notification_id
        ) AS notifications
        GROUP BY 1, 2, 3, 4, 5
        """
    }

    /// The same columns for `notifications`, each folded in event order.
    static func orderedQuery(_ definition: ExperimentDefinition, _ covariates: ExperimentCovariates,
                             notifications: [String]) -> SQL {
        """
        SELECT device_id, category, stages, presentation, NULL::text, count(*)::int8
        FROM (
            SELECT (array_agg(device_id ORDER BY occurred_at, event_id))[1] AS device_id,
                   (array_agg(category ORDER BY occurred_at, event_id))[1] AS category,
                   bit_or(stages) AS stages,
                   (array_agg(presentation ORDER BY occurred_at, event_id) FILTER (WHERE type = 'displayed'))[1]
                       AS presentation
            FROM (\(fragment: windowEvents(definition, covariates, only: notifications))) AS window_events
            GROUP BY notification_id
        ) AS disagreeing
        GROUP BY 1, 2, 3, 4
        """
    }

    /// The window's events that a fold reads (of `notifications` only, if given), each with its
    /// stages (bits) and, if displayed, its presentation.
    private static func windowEvents(_ definition: ExperimentDefinition, _ covariates: ExperimentCovariates,
                                     only notifications: [String]? = nil) -> SQL {
        var events: SQL = """
            SELECT notification_id, event_id, occurred_at, device_id, category, type,
                   CASE type WHEN 'displayed' THEN payload ->> 'presentation'
                             WHEN 'action' THEN payload ->> 'action_id' END AS detail,
                   type = 'action' AND payload ->> 'text_input_length' IS NOT NULL AS replied
            FROM events
            WHERE app_id = \(definition.appID)
              AND occurred_at >= \(covariates.from.postgres) AND occurred_at < \(covariates.to.postgres)
              AND type IN ('sent', 'delivered', 'displayed', 'expanded', 'action')
            """
        if let notifications { events.append(" AND notification_id = ANY(\(notifications))") }
        return """
        SELECT notification_id, event_id, occurred_at, device_id, category, type,
               CASE type WHEN 'delivered' THEN 1 WHEN 'expanded' THEN 2
                         WHEN 'action' THEN CASE WHEN detail IS NULL THEN 0
                                                 WHEN detail = \(ActionDetails.openIdentifier) THEN 4
                                                 WHEN detail = \(ActionDetails.dismissIdentifier) THEN 8
                                                 ELSE 16 END
                                            | CASE WHEN replied THEN 32 ELSE 0 END
                         ELSE 0 END AS stages,
               CASE WHEN type = 'displayed' THEN detail END AS presentation
        FROM (\(fragment: events)) AS window_rows
        """
    }
}
