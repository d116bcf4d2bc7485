import EngageCore
import EventStore
import Postgres

/// Incremental experiment looks (issue 19): an experiment's tallies kept in PostgreSQL between
/// looks (`sql/migrations/012_experiment_tallies.sql`), brought up to date by folding only the
/// events appended since the last look.
///
/// A fold runs in one READ COMMITTED transaction that holds the experiment's advisory
/// transaction lock (two schedulers fold one after the other, never the same events twice). The
/// lock, not a row lock, because a row lock or any write would give the fold's transaction an id
/// for as long as it reads, and every reader bounded by the oldest running transaction (the
/// projector, the projector's lag) would stall behind it: all writes come last. It reads the
/// stored per-device tallies, takes as its bound the oldest transaction still running
/// (`pg_snapshot_xmin`; every event of an older transaction is committed or never will be), and
/// reads every event of the experiment's notifications that have an event between the checkpoint
/// and that bound, the earlier ones included. Each such notification is folded twice, without
/// and with its new events, and its old observation is replaced by the new one
/// (`ExperimentTallyState.replace`): a late expansion, or an earlier event with another device or
/// arm, moves the notification's counts as a replay would. The changed devices, the histograms
/// and the checkpoint are written in the same transaction, so a fold that fails or dies before its
/// commit leaves the tallies and the checkpoint as they were.
///
/// Re-deriving a touched notification from its events costs a read of the earlier events of
/// notifications that get new ones, instead of keeping a state row for every notification (one
/// write per notification, tens of millions of rows, for an experiment of ten million); see
/// docs/experiments.md, "Incremental looks".
public enum ExperimentTallyStore {
    /// Folds the events since the last look and returns the tallies as of now: equal to a full
    /// replay (`ExperimentRunner.replay`) of the log below the fold's bound. Test seams:
    /// `afterReading` runs on the fold's connection once everything is read and nothing written,
    /// `beforeCommit` once the checkpoint and the tallies are written, before the commit.
    /// `logGeneration`: the `LogRewrite` generation the caller read before it began (nil: the
    /// fold's own reading); the fold refuses if a prune or restore began since.
    static func look(_ definition: ExperimentDefinition, pool: ConnectionPool, chunkSize: Int = 5_000, logGeneration: Int64? = nil,
                     silenceLimit: Duration? = nil,
                     afterReading: @escaping @Sendable (Connection) throws -> Void = { _ in },
                     beforeCommit: @escaping @Sendable () throws -> Void = {}) async throws -> ExperimentReplay {
        try await pool.withTransaction(silenceLimit: silenceLimit) { connection in
            try fold(definition, chunkSize: chunkSize, logGeneration: logGeneration, afterReading: afterReading,
                     beforeCommit: beforeCommit, on: connection)
        }
    }

    /// Drops the stored tallies of one experiment (nil: of every experiment), so that its next look
    /// folds the log as it is from the start. Needed whenever events leave the log (`engage log
    /// prune`) or come back with their old transaction ids (`engage log restore`), which a
    /// checkpoint cannot see. One experiment: takes its look lock. Every experiment: takes the
    /// reset lock exclusively, which every fold holds shared, so it also waits for a first fold that
    /// has no checkpoint row yet. Either way a fold under way commits first and is dropped with the
    /// rest, and a later one starts from nothing. Returns the experiments whose tallies were dropped.
    @discardableResult
    public static func reset(experimentID: String? = nil, pool: ConnectionPool) async throws -> Int {
        try await pool.withTransaction { connection in try reset(experimentID: experimentID, on: connection) }
    }

    /// Every experiment's tallies dropped in the caller's transaction, as `engage log prune` and
    /// `engage log restore` (and the scheduler, for one of them that died) end their rewrite of the
    /// log (`LogRewrite`): until then no look stores an analysis.
    public static let resetEveryExperiment: LogRewrite.Reset = { connection in try reset(on: connection) }

    /// `reset(experimentID:pool:)` in the caller's open transaction: `engage log prune` and
    /// `engage log restore` drop every experiment's tallies in the transaction that ends their
    /// rewrite of the log (`LogRewrite.end`), so no look stores a fold of the log they changed.
    public static func reset(experimentID: String? = nil, on connection: Connection) throws -> Int {
        if let experimentID {
            try connection.execute("SELECT pg_advisory_xact_lock(\(lockNamespace)::int4, hashtext(\(experimentID)))")
        } else {
            try connection.execute("SELECT pg_advisory_xact_lock(\(resetLockNamespace)::int4, 0)")
        }
        // The device tallies and histograms go with their checkpoint (ON DELETE CASCADE).
        return try connection.query("""
            WITH dropped AS (
                DELETE FROM experiment_tally_checkpoints WHERE \(experimentID)::text IS NULL OR experiment_id = \(experimentID)
                RETURNING 1)
            SELECT count(*)::int8 FROM dropped
            """)[0].decode(0, as: Int.self)
    }

    /// What the stored tallies were folded for: the fold's rules (its version, the stages, the
    /// histogram's layout) and the app, categories and arms. Any change refolds from the start.
    /// Names are length-prefixed, so no two definitions share a key whatever their names hold.
    static func definitionKey(_ definition: ExperimentDefinition) -> String {
        func field(_ name: String) -> String { "\(name.utf8.count):\(name)" }
        let rules = "fold \(foldVersion) stages \(FunnelStage.allCases.count) "
            + "histogram \(LatencyHistogram.Layout.standard.countsLength)"
        return [rules, field(definition.appID), definition.categories.sorted().map(field).joined(),
                ExperimentArmIndex(definition).names.map(field).joined()].joined(separator: "\n")
    }

    /// Raised whenever `ExperimentObservation.Fold` changes what it makes of a notification.
    static let foldVersion = 1

    /// The advisory lock namespace of experiment looks ("look" in ASCII); the experiment's id is
    /// the second key.
    static let lockNamespace: Int32 = 0x6C6F_6F6B

    /// The advisory lock (with second key 0) every fold holds shared and a reset of every
    /// experiment exclusively ("tall" in ASCII): its own namespace, so no experiment's
    /// `hashtext` can collide with it.
    static let resetLockNamespace: Int32 = 0x7461_6C6C

    private struct Checkpoint {
        var foldedBelow: UInt64 = 0
        var events = 0, notifications = 0, undecodable = 0
    }

    static func fold(_ definition: ExperimentDefinition, chunkSize: Int, logGeneration: Int64? = nil,
                     afterReading: (Connection) throws -> Void = { _ in },
                     beforeCommit: () throws -> Void, on connection: Connection) throws -> ExperimentReplay {
        // Shared first (a reset of every experiment waits for this fold, even a first one), then
        // the experiment's own lock.
        try connection.execute("SELECT pg_advisory_xact_lock_shared(\(resetLockNamespace)::int4, 0)")
        try connection.execute("""
            SELECT pg_advisory_xact_lock(\(lockNamespace)::int4, hashtext(\(String(definition.id))))
            """)
        // Before anything of the log or the tallies is read (READ COMMITTED: every later statement
        // sees at least what this one saw): no fold while a prune or restore is under way, whose
        // reset will drop what it writes; the generation goes with the analysis, which is stored
        // only if no prune or restore began meanwhile (`Scheduler.finish`).
        let rewrite = try LogRewrite.state(on: connection)
        try ExperimentLookDeferred.check(rewrite, since: logGeneration)
        var (checkpoint, state, stale) = try load(definition, on: connection)
        let snapshot = try connection.query("SELECT pg_snapshot_xmin(s), pg_snapshot_xmax(s) FROM pg_current_snapshot() AS s")[0]
        let bound: UInt64 = try snapshot.decode(0)
        // Folded below a transaction the database has not reached (a log moved into a new cluster
        // with pg_dump): every event appended now would be below the checkpoint and the look would
        // return the stored tallies unchanged, forever. Raised instead, before anything is written.
        if checkpoint.foldedBelow > 0 {
            try TransactionCounter.check(checkpoint.foldedBelow - 1, heldBy: .experimentLook, next: try snapshot.decode(1))
        }
        var replay = ExperimentReplay(definition: definition)
        replay.ranges = 1
        replay.logGeneration = logGeneration ?? rewrite.generation
        if bound > checkpoint.foldedBelow {
            let (events, undecodable) = try foldNew(definition, from: checkpoint.foldedBelow, below: bound,
                                                    chunkSize: chunkSize, into: &state, on: connection)
            checkpoint.events += events
            replay.eventsRead = events
            checkpoint.undecodable += undecodable
            checkpoint.foldedBelow = bound
            try afterReading(connection)
            // The writes (the checkpoint first: the tallies refer to it): from here on the transaction
            // has an id, for as short a time as it can.
            try connection.execute("""
                INSERT INTO experiment_tally_checkpoints (experiment_id, definition_key, folded_below, events,
                                                          notifications, undecodable, other_experiment, unknown_arm,
                                                          outside_categories, folded_at)
                VALUES (\(definition.id), \(definitionKey(definition)), \(String(bound))::xid8, \(checkpoint.events),
                        \(state.notifications), \(checkpoint.undecodable), \(state.otherExperiment),
                        \(state.unknownArm), \(state.outsideCategories), now())
                ON CONFLICT (experiment_id) DO UPDATE
                SET definition_key = EXCLUDED.definition_key, folded_below = EXCLUDED.folded_below,
                    events = EXCLUDED.events, notifications = EXCLUDED.notifications,
                    undecodable = EXCLUDED.undecodable, other_experiment = EXCLUDED.other_experiment,
                    unknown_arm = EXCLUDED.unknown_arm, outside_categories = EXCLUDED.outside_categories,
                    folded_at = EXCLUDED.folded_at
                """)
            if stale {
                try connection.execute("DELETE FROM experiment_device_tallies WHERE experiment_id = \(definition.id)")
                try connection.execute("DELETE FROM experiment_tally_histograms WHERE experiment_id = \(definition.id)")
            }
            try store(definition, state, on: connection)
            try beforeCommit()
        }
        replay.tallies = ExperimentTallies(definition: definition, restoring: state)
        replay.events = checkpoint.events
        replay.notifications = state.notifications
        replay.undecodable = checkpoint.undecodable
        return replay
    }

    /// Reads the experiment's checkpoint and tallies (none on its first look); `stale` when the
    /// stored tallies were folded for another definition or fold, to be replaced by a full fold.
    private static func load(_ definition: ExperimentDefinition,
                             on connection: Connection) throws -> (Checkpoint, ExperimentTallyState, stale: Bool) {
        let rows = try connection.query("""
            SELECT definition_key, folded_below, events, notifications, undecodable, other_experiment, unknown_arm,
                   outside_categories
            FROM experiment_tally_checkpoints WHERE experiment_id = \(definition.id)
            """)
        var state = ExperimentTallyState(definition: definition)
        guard rows.rowCount > 0 else { return (Checkpoint(), state, false) }
        let row = rows[0]
        guard try row.decode(0, as: String.self) == definitionKey(definition) else {
            return (Checkpoint(), state, true)
        }
        let checkpoint = Checkpoint(foldedBelow: try row.decode(1), events: try row.decode(2),
                                    notifications: try row.decode(3), undecodable: try row.decode(4))
        state.notifications = checkpoint.notifications
        state.otherExperiment = try row.decode(5)
        state.unknownArm = try row.decode(6)
        state.outsideCategories = try row.decode(7)
        try connection.execute("""
            DECLARE experiment_tallies NO SCROLL CURSOR FOR
            SELECT tally, device_id, counts FROM experiment_device_tallies WHERE experiment_id = \(definition.id)
            """)
        try connection.repeatUntilEmpty(SQL(unsafeSQL: "FETCH FORWARD 20000 FROM experiment_tallies")) { rows in
            for index in 0..<rows.rowCount {
                let row = rows[index]
                guard let tally = ExperimentTallyState.Key(code: try row.decode(0)) else {
                    throw PostgresError(kind: .decoding, message: "experiment_device_tallies: unknown tally")
                }
                state.load(tally, device: try row.decode(1), counts: try counts(row.decode(2)))
            }
        }
        try connection.execute("CLOSE experiment_tallies")
        for row in try connection.query("""
            SELECT tally, counts FROM experiment_tally_histograms WHERE experiment_id = \(definition.id)
            """).rows {
            guard let tally = ExperimentTallyState.Key(code: try row.decode(0)) else {
                throw PostgresError(kind: .decoding, message: "experiment_tally_histograms: unknown tally")
            }
            do {
                try state.load(tally, processingCounts: try row.decode(1))
            } catch {
                throw PostgresError(kind: .decoding, message: "experiment_tally_histograms: \(error)")
            }
        }
        return (checkpoint, state, false)
    }

    /// Stored counts by stage raw value.
    private static func counts(_ stored: [Int64]) throws -> FunnelCounts {
        let stages = FunnelStage.allCases
        guard stored.count == stages.count else {
            throw PostgresError(kind: .decoding, message: "experiment_device_tallies: \(stored.count) counts for \(stages.count) stages")
        }
        var counts = FunnelCounts()
        for (stage, count) in zip(stages, stored) { counts[stage] = Int(count) }
        return counts
    }

    /// Folds the notifications with events in `[from, below)` (transaction ids): every event of
    /// theirs below `below`, the ones before `from` making the observation already tallied.
    /// Returns the new events read and how many of them were undecodable.
    private static func foldNew(_ definition: ExperimentDefinition, from: UInt64, below: UInt64, chunkSize: Int,
                                into state: inout ExperimentTallyState,
                                on connection: Connection) throws -> (events: Int, undecodable: Int) {
        var sql: SQL = """
            DECLARE experiment_look NO SCROLL CURSOR FOR
            SELECT \(unsafeSQL: ExperimentReplay.columns), transaction_id >= \(String(from))::xid8
            FROM events
            WHERE app_id = \(definition.appID) AND experiment_id = \(definition.id)
              AND transaction_id < \(String(below))::xid8
            """
        if from > 0 {
            // The notifications with new events, found through the experiment's own tagged events
            // by transaction (`events_experiment_by_transaction`, migration 025), not through every
            // app's events since the previous look.
            sql.append("""
                 AND notification_id IN (
                    SELECT notification_id FROM events
                    WHERE transaction_id >= \(String(from))::xid8 AND transaction_id < \(String(below))::xid8
                      AND app_id = \(definition.appID) AND experiment_id = \(definition.id))
                """)
        }
        sql.append(" ORDER BY app_id, experiment_id, notification_id")
        try connection.execute(sql)
        let reader = ReplayRowReader(arms: ExperimentArmIndex(definition))
        var events = 0, undecodable = 0
        // The notification's fold without its new events (what is tallied) and with them.
        var tallied = ExperimentObservation.Fold(), current = ExperimentObservation.Fold()
        var first: PostgresRow?
        try connection.repeatUntilEmpty(SQL(unsafeSQL: "FETCH FORWARD \(chunkSize) FROM experiment_look")) { rows in
            for index in 0..<rows.rowCount {
                let row = rows[index]
                if first.map({ !row.cell(1).hasSameBytes(as: $0.cell(1)) }) ?? true {
                    state.replace(tallied.observation, with: current.observation)
                    tallied = ExperimentObservation.Fold()
                    current = ExperimentObservation.Fold()
                    first = row
                }
                let isNew = try row.cell(9).bool()
                if isNew { events += 1 }
                guard let facts = try reader.facts(row) else {
                    if isNew { undecodable += 1 }
                    continue
                }
                let origin = { (try row.decode(7, as: String.self), try row.decode(8, as: String.self)) }
                if !isNew { try tallied.apply(facts, origin: origin) }
                try current.apply(facts, origin: origin)
            }
        }
        state.replace(tallied.observation, with: current.observation)
        try connection.execute("CLOSE experiment_look")
        return (events, undecodable)
    }

    /// Writes the devices and histograms the fold changed.
    private static func store(_ definition: ExperimentDefinition, _ state: ExperimentTallyState,
                              on connection: Connection) throws {
        var keptTallies: [Int] = [], keptDevices: [String] = [], keptCounts: [String] = []
        var goneTallies: [Int] = [], goneDevices: [String] = []
        let stages = FunnelStage.allCases
        for changed in state.changedDevices {
            if let counts = state.devices[changed.tally]?[changed.deviceID] {
                keptTallies.append(changed.tally.code)
                keptDevices.append(changed.deviceID)
                keptCounts.append("{" + stages.map { String(counts[$0]) }.joined(separator: ",") + "}")
            } else {
                goneTallies.append(changed.tally.code)
                goneDevices.append(changed.deviceID)
            }
        }
        if !goneDevices.isEmpty {
            try connection.execute("""
                DELETE FROM experiment_device_tallies
                WHERE experiment_id = \(definition.id)
                  AND (tally, device_id) IN (SELECT t::int2, d FROM unnest(\(goneTallies)::int8[], \(goneDevices)::text[]) AS u(t, d))
                """)
        }
        if !keptDevices.isEmpty {
            try connection.execute("""
                INSERT INTO experiment_device_tallies (experiment_id, tally, device_id, counts)
                SELECT \(definition.id), t::int2, d, c::int8[]
                FROM unnest(\(keptTallies)::int8[], \(keptDevices)::text[], \(keptCounts)::text[]) AS u(t, d, c)
                ON CONFLICT (experiment_id, tally, device_id) DO UPDATE SET counts = EXCLUDED.counts
                """)
        }
        for tally in state.changedHistograms {
            let counts = state.processing[tally] ?? []
            try connection.execute("""
                INSERT INTO experiment_tally_histograms (experiment_id, tally, counts)
                VALUES (\(definition.id), \(tally.code)::int2, \(counts)::int8[])
                ON CONFLICT (experiment_id, tally) DO UPDATE SET counts = EXCLUDED.counts
                """)
        }
    }
}
