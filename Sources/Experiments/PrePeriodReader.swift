import EngageCore
import Postgres

/// Reads CUPED's covariates: each device's notifications in the pre-experiment window, folded
/// per notification as the analysis folds them (device and category of the first event in event
/// order, presentation of the first `displayed`, flags from any event), summed per device.
/// Only the events that occurred in the window count, and none tagged with the experiment itself:
/// the analysis counts every one of those (whatever its `occurred_at`, which a device clock behind
/// can put before `start_at`), and a covariate must not hold the treatment's own outcome.
///
/// "First in event order" needs each notification's events sorted, which made this read cost
/// more than the experiment's own replay (issue 15 point 7). The grouping query avoids those
/// sorts and every aggregate over text (each of which copies a value per event): it groups the
/// events by notification, device and category, with the stages and the presentation as bits,
/// so a notification whose events agree, as every client's do, is one row whose values are its
/// first event's. A notification in more than one row (its events disagree on the device or the
/// category) or with more than one presentation bit is not counted from those rows; a second
/// statement, run only when there are some, folds just those in event order, so the covariates
/// stay exactly those of the fold.
///
/// The result holds one row per notification of the window, read whole: about 200 bytes each in
/// engage's memory while the read lasts (200 MB at a million notifications), as the rows of the
/// grouping that summed per device before did.
///
/// The grouping holds every notification of the window in one hash table (about 240 bytes each),
/// so the transaction lets it have the memory (`groupingMemory`) rather than spill to disk, and
/// turns off JIT compilation (about a second of compiling at every look, for a query that runs
/// once) and parallel workers (whose partial groups would not shrink, each notification's events
/// being spread over the workers, and which would compete with the replay read at the same time).
enum PrePeriodReader {
    static func read(_ definition: ExperimentDefinition, on connection: Connection) throws -> ExperimentCovariates? {
        try rows(definition, on: connection)?.covariates()
    }

    /// The window's rows, read in one snapshot; summing them per device (`PrePeriodRows.covariates`)
    /// needs no connection, so the caller can return it to the pool first: with a pool of two, the
    /// replay's second lane starts while the pre-period is summed (issue 15 point 7).
    static func rows(_ definition: ExperimentDefinition, on connection: Connection) throws -> PrePeriodRows? {
        guard let days = definition.analysis.cupedPrePeriodDays, let start = definition.startAt else { return nil }
        let window = ExperimentCovariates(days: days, before: start)
        // One snapshot for both statements: a disagreeing notification is folded from the same events.
        return try connection.transaction(isolation: .repeatableRead) { connection in
            try configureTransaction(on: connection)
            let groups = try connection.query(query(definition, window))
            // Notifications in more than one row, found by hashes of their ids: a collision only
            // sends a notification through the exact second statement.
            let hashes = (0..<groups.rowCount).map { groups[$0].cell(0).bytesHash }
            var seen = Set<Int>(minimumCapacity: hashes.count), repeated = Set<Int>()
            for hash in hashes where !seen.insert(hash).inserted { repeated.insert(hash) }
            var disagreeing = Set<String>()
            var skipped = [Bool](repeating: false, count: groups.rowCount)
            for index in 0..<groups.rowCount {
                let presentationBits: Int = try groups[index].decode(4)
                guard presentationBits & (presentationBits - 1) == 0, !repeated.contains(hashes[index]) else {
                    disagreeing.insert(try groups[index].decode(0))
                    skipped[index] = true
                    continue
                }
            }
            let folded = disagreeing.isEmpty
                ? nil : try connection.query(orderedQuery(definition, window, notifications: disagreeing.sorted()))
            return PrePeriodRows(window: window, categories: Set(definition.categories), groups: groups,
                                 skipped: skipped, folded: folded)
        }
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

    static func stages(bits: Int, presentation: Presentation?) -> FunnelStageSet {
        var engaged = FunnelStageSet()
        for (bit, stage) in engagedBits where bits & bit != 0 { engaged.insert(stage) }
        return FunnelStageSet(delivered: bits & deliveredBit != 0,
                              presentation: ObservedPresentation(presentation),
                              engaged: engaged)
    }

    /// The bit of each presentation in the query's `presentation` column (1, 2, ...), and the bit
    /// after them for a displayed event whose presentation is none of them (or missing).
    static let presentationBits: [(Int, Presentation)] = Presentation.allCases.enumerated().map { (1 << $0.offset, $0.element) }
    static let otherPresentationBit = 1 << Presentation.allCases.count

    /// The presentation of a notification whose `displayed` events set `bits` (at most one bit):
    /// nil for none, or for one that is not a presentation.
    static func presentation(bits: Int) -> Presentation? {
        presentationBits.first { $0.0 == bits }?.1
    }

    /// The window's notifications, one row per notification, device and category: the
    /// notification's id, device, category, stages (bits) and presentations (bits).
    static func query(_ definition: ExperimentDefinition, _ covariates: ExperimentCovariates) -> SQL {
        """
        SELECT notification_id, device_id, category, bit_or(stages), bit_or(presentation_bit)
        FROM (\(fragment: windowEvents(definition, covariates))) AS window_events
        GROUP BY notification_id, device_id, category
        """
    }

    /// For `notifications`, each folded in event order: device, category, stages (bits) and
    /// presentation, with the number of notifications.
    static func orderedQuery(_ definition: ExperimentDefinition, _ covariates: ExperimentCovariates,
                             notifications: [String]) -> SQL {
        """
        SELECT device_id, category, stages, presentation, count(*)::int8
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
    /// stages (bits) and, if displayed, its presentation (and its bit).
    private static var presentationCases: SQL {
        var cases: SQL = ""
        for (bit, presentation) in presentationBits { cases.append(" WHEN detail = \(presentation.rawValue) THEN \(bit)") }
        return cases
    }

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
              AND experiment_id IS DISTINCT FROM \(definition.id)
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
               CASE WHEN type = 'displayed' THEN detail END AS presentation,
               CASE WHEN type <> 'displayed' THEN 0\(fragment: presentationCases) ELSE \(otherPresentationBit) END AS presentation_bit
        FROM (\(fragment: events)) AS window_rows
        """
    }
}

/// The pre-period's rows as `PrePeriodReader.rows` read them: the grouping's rows (those of
/// disagreeing notifications marked skipped) and the disagreeing notifications folded in event
/// order. Results of libpq live apart from their connection, so these outlive its transaction.
struct PrePeriodRows: Sendable {
    let window: ExperimentCovariates
    let categories: Set<String>
    let groups: QueryResult
    let skipped: [Bool]
    let folded: QueryResult?

    /// Each device's notifications, summed.
    func covariates() throws -> ExperimentCovariates {
        var covariates = window
        func add(device: String, category: String, stages: FunnelStageSet, count: Int = 1) {
            guard categories.isEmpty || categories.contains(category) else { return }
            covariates.add(device: device, reached: stages, count: count)
        }
        for index in 0..<groups.rowCount where !skipped[index] {
            let row = groups[index]
            add(device: try row.decode(1), category: try row.decode(2),
                stages: PrePeriodReader.stages(bits: try row.decode(3),
                                               presentation: PrePeriodReader.presentation(bits: try row.decode(4))))
        }
        for row in folded?.rows ?? [] {
            add(device: try row.decode(0), category: try row.decode(1),
                stages: PrePeriodReader.stages(bits: try row.decode(2), presentation: (try row.decode(3, as: String?.self)).flatMap(Presentation.init(rawValue:))),
                count: try row.decode(4))
        }
        return covariates
    }
}
