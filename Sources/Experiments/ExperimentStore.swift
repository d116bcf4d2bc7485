import EngageCore
import EventStore
import Postgres
import Runtime

/// Experiment definitions and their lifecycle in PostgreSQL: create (as a draft), start, stop.
///
/// Every change is one transaction that also appends an entry to the event log (the action, its
/// reason and the definition after it; see `ExperimentLogEntry`), so the log holds the whole
/// lifecycle. Its commit is checked against the synchronous standbys like an append's
/// (`StandbyConfirmation.confirmedTransaction`): a change they do not have throws
/// `.unconfirmedCommit`, committed on the primary alone. The definition's own `status` always equals the `status` column.
///
/// A change takes at most `commitTimeout` once it has its connection (a primary waiting at the
/// COMMIT for a standby it lost waits without end): past it, a change interrupted before its
/// COMMIT was sent is rolled back (`DatabaseDidNotAnswer`: nothing changed, retry), and one
/// interrupted during the COMMIT's round trip may be made (`.unconfirmedCommit`: read it back
/// before repeating it).
public struct ExperimentStore: Sendable {
    public let pool: ConnectionPool
    /// Stamps the log entries of lifecycle changes, and starts experiments by default.
    public let time: any TimeSource
    /// How long a create, start or stop may take once it has its connection: the server's
    /// `--commit-timeout` (`EngageServer.Configuration.commitTimeout`). nil leaves it unbounded.
    public let commitTimeout: Duration?

    public init(pool: ConnectionPool, time: any TimeSource = SystemTime(), commitTimeout: Duration? = nil) {
        self.pool = pool
        self.time = time
        self.commitTimeout = commitTimeout
    }

    // MARK: Create

    /// Decodes, validates and stores a new draft.
    public func create(json: [UInt8]) async throws -> ExperimentRecord {
        let definition: ExperimentDefinition
        do {
            definition = try ExperimentDefinition(json: json)
        } catch {
            throw ExperimentStoreError(code: .invalidDefinition, experimentID: "", problems: [error], detail: error.description)
        }
        return try await create(definition)
    }

    /// What keeps a definition from being created: its own problems, a status other than draft,
    /// and the checks made only at creation. Pure, so the command line says them before it opens
    /// a database.
    public static func creationProblems(_ definition: ExperimentDefinition) -> [ExperimentProblem] {
        var problems = definition.problems
        if definition.status != .draft {
            problems.append(ExperimentProblem(field: "status", problem: "must be draft when creating; start the experiment afterwards"))
        }
        // Checked here, not in `problems`, which every stored definition is decoded with: an
        // experiment stored before these checks still reads (and is analysed at its stop_at).
        if definition.alpha > 0, definition.alpha < ExperimentDefinition.smallestAlpha, !problems.contains(where: { $0.field == "alpha" }) {
            problems.append(ExperimentProblem(field: "alpha", problem: ExperimentDefinition.smallestAlphaProblem))
        }
        // Ingestion refuses every event whose category or experiment arm holds one of these.
        let identifiers = definition.categories.enumerated().map { ("categories[\($0)]", $1) }
            + definition.arms.enumerated().map { ("arms[\($0)].name", $1.name) }
        for (field, text) in identifiers where IdentifierText.holdsRefusedCharacter(text) {
            problems.append(ExperimentProblem(field: field, problem: IdentifierText.refusedCharacterProblem))
        }
        if !definition.schedule.everFires {
            problems.append(ExperimentProblem(field: "schedule", problem: "never fires: no date matches its day of month and month"))
        }
        for index in Self.armsNoHashReaches(definition) {
            problems.append(ExperimentProblem(field: "arms[\(index)].weight", problem: "no device could ever be assigned to it: its share "
                                              + "(weight times coverage) holds none of the 10,000 values the assignment hash takes"))
        }
        return problems
    }

    /// The arms whose bucket holds no value of the hash (steps of 1/10,000): `0.00005` after
    /// `0.99995` is a range no device lands in, and such an arm would never reach its minimum.
    static func armsNoHashReaches(_ definition: ExperimentDefinition) -> [Int] {
        let ranges = GrowthBookBucketing.bucketRanges(weights: definition.arms.map(\.weight), coverage: definition.coverage)
        var reached = Set<Int>()
        for step in 0..<10_000 {
            if let arm = GrowthBookBucketing.chooseVariation(n: Double(step) / 10_000, ranges: ranges) { reached.insert(arm) }
        }
        return definition.arms.indices.filter { !reached.contains($0) }
    }

    /// Validates and stores a new experiment; it must be a draft (start it afterwards).
    public func create(_ definition: ExperimentDefinition) async throws -> ExperimentRecord {
        let problems = Self.creationProblems(definition)
        if !problems.isEmpty {
            throw ExperimentStoreError(code: .invalidDefinition, experimentID: definition.id, problems: problems,
                                       detail: problems.map(\.description).joined(separator: "; "))
        }
        let json = PostgresJSONB(definition.canonicalJSON)
        do {
            return try await pool.withConnection(answerLimit: commitTimeout) { connection in
                try StandbyConfirmation.confirmedTransaction(on: connection) { connection in
                    let row = try connection.query("""
                        INSERT INTO experiments (id, app_id, definition, status)
                        VALUES (\(definition.id), \(definition.appID), \(json), 'draft')
                        RETURNING created_at, updated_at
                        """)[0]
                    try ExperimentLog.append(.lifecycle(.created, definition: definition, reason: nil, at: time.wallClock), on: connection)
                    return ExperimentRecord(definition: definition, createdAt: try row.timestamp(0), updatedAt: try row.timestamp(1))
                }
            }
        } catch let error as PostgresError where error.isUniqueViolation {
            throw ExperimentStoreError(code: .alreadyExists, experimentID: definition.id,
                                       detail: "an experiment \(definition.id) exists already (experiment ids are unique across the apps of this server)")
        }
    }

    // MARK: Read

    /// Experiments, newest first; of one app and one status when given. One whose stored
    /// definition this build's rules refuse (stored by another release, or edited by hand) is
    /// left out and named in `unreadable`, as the scheduler skips it: it made every listing, and
    /// every assignment of its app, fail as if the database were down.
    public func list(app: String? = nil, status: ExperimentStatus? = nil) async throws -> ExperimentListing {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                SELECT definition, created_at, updated_at, id FROM experiments
                WHERE (\(app)::text IS NULL OR app_id = \(app))
                  AND (\(status?.rawValue)::text IS NULL OR status = \(status?.rawValue))
                ORDER BY created_at DESC, id
                """)
            var listing = ExperimentListing()
            for row in rows.rows {
                do {
                    listing.records.append(try Self.record(row))
                } catch let error as PostgresError where error.kind == .decoding {
                    listing.unreadable.append(try row.decode(3, as: String.self))
                }
            }
            return listing
        }
    }

    /// The experiment, or nil when there is none (or it belongs to another app than `app`).
    public func get(_ id: String, app: String? = nil) async throws -> ExperimentRecord? {
        try await pool.withConnection { connection in try Self.get(id, app: app, on: connection) }
    }

    static func get(_ id: String, app: String?, forUpdate: Bool = false, on connection: Connection) throws -> ExperimentRecord? {
        // No experiment has an id that is not a slug; one with a NUL byte would not even reach
        // PostgreSQL as a parameter, and its error would read as the database being down.
        guard ExperimentDefinition.isValidID(id) else { return nil }
        let rows = try connection.query("""
            SELECT definition, created_at, updated_at FROM experiments
            WHERE id = \(id) AND (\(app)::text IS NULL OR app_id = \(app))
            \(unsafeSQL: forUpdate ? "FOR UPDATE" : "")
            """)
        return try rows.rows.first.map(record)
    }

    // MARK: Lifecycle

    /// Draft to running; `start_at` becomes `now` (the wall clock by default) unless the definition set it.
    public func start(_ id: String, app: String? = nil, now: Timestamp? = nil) async throws -> ExperimentRecord {
        let now = now ?? time.wallClock
        return try await transition(id, app: app, action: .started, reason: nil) { definition in
            guard definition.status == .draft else {
                throw ExperimentStoreError(code: .invalidTransition, experimentID: id,
                                           detail: "experiment \(id) is \(definition.status.rawValue); only a draft can be started")
            }
            definition.status = .running
            if definition.startAt == nil {
                // Started now, it would end before it began: said as what it is, not as a rule on
                // a start_at the definition never gave.
                if let stopAt = definition.stopAt, stopAt <= now {
                    let problem = "has passed; set a later stop_at, or start_at too for a window analysed after the fact"
                    throw ExperimentStoreError(code: .invalidDefinition, experimentID: id,
                                               problems: [ExperimentProblem(field: "stop_at", problem: problem)],
                                               detail: "stop_at: " + problem)
                }
                definition.startAt = now
            }
        }
    }

    /// Draft or running to stopped; no further runs are scheduled. `reason` is logged with it
    /// (nil when stopped by hand).
    public func stop(_ id: String, app: String? = nil, reason: String? = nil) async throws -> ExperimentRecord {
        try await pool.withConnection(answerLimit: commitTimeout) { connection in
            try StandbyConfirmation.confirmedTransaction(on: connection) { try Self.stop(id, app: app, reason: reason, on: $0) }
        }
    }

    /// Inside an open transaction.
    static func stop(_ id: String, app: String?, reason: String?, on connection: Connection) throws -> ExperimentRecord {
        try transition(id, app: app, action: .stopped, reason: reason, on: connection) { definition in
            guard definition.status != .stopped else {
                throw ExperimentStoreError(code: .invalidTransition, experimentID: id, detail: "experiment \(id) is already stopped")
            }
            definition.status = .stopped
        }
    }

    private func transition(_ id: String, app: String?, action: ExperimentLogEntry.Action, reason: String?,
                            _ change: @escaping @Sendable (inout ExperimentDefinition) throws -> Void) async throws -> ExperimentRecord {
        try await pool.withConnection(answerLimit: commitTimeout) { connection in
            try StandbyConfirmation.confirmedTransaction(on: connection) {
                try Self.transition(id, app: app, action: action, reason: reason, on: $0, change)
            }
        }
    }

    private static func transition(_ id: String, app: String?, action: ExperimentLogEntry.Action, reason: String?,
                                   on connection: Connection,
                                   _ change: (inout ExperimentDefinition) throws -> Void) throws -> ExperimentRecord {
        guard var record = try Self.get(id, app: app, forUpdate: true, on: connection) else { throw ExperimentStoreError.notFound(id) }
        try change(&record.definition)
        let problems = record.definition.problems
        if !problems.isEmpty {
            throw ExperimentStoreError(code: .invalidDefinition, experimentID: id, problems: problems,
                                       detail: problems.map(\.description).joined(separator: "; "))
        }
        let row = try connection.query("""
            UPDATE experiments
            SET definition = \(PostgresJSONB(record.definition.canonicalJSON)), status = \(record.definition.status.rawValue),
                updated_at = now()
            WHERE id = \(id)
            RETURNING updated_at
            """)[0]
        record.updatedAt = try row.timestamp(0)
        try ExperimentLog.append(.lifecycle(action, definition: record.definition, reason: reason, at: record.updatedAt),
                                 on: connection)
        return record
    }

    /// The experiment's entries in the event log, lifecycle and analyses, in log order; empty
    /// when there is no such experiment.
    public func history(_ id: String) async throws -> [ExperimentLog.StoredEntry] {
        try await pool.withConnection { connection in
            guard let record = try Self.get(id, app: nil, on: connection) else { return [] }
            return try ExperimentLog.entries(experimentID: id, appID: record.definition.appID, on: connection)
        }
    }

    /// The same for an experiment already read, without reading it again.
    public func history(of definition: ExperimentDefinition) async throws -> [ExperimentLog.StoredEntry] {
        try await pool.withConnection { connection in
            try ExperimentLog.entries(experimentID: definition.id, appID: definition.appID, on: connection)
        }
    }

    static func record(_ row: PostgresRow) throws -> ExperimentRecord {
        ExperimentRecord(definition: try definition(row, column: 0), createdAt: try row.timestamp(1), updatedAt: try row.timestamp(2))
    }

    static func definition(_ row: PostgresRow, column: Int) throws -> ExperimentDefinition {
        let json = try row.decode(column, as: PostgresJSONB.self).json
        do {
            return try ExperimentDefinition(json: json)
        } catch {
            throw PostgresError(kind: .decoding, message: "a stored experiment definition does not decode: \(error)")
        }
    }

    // MARK: Runs

    /// The experiment's runs, newest scheduled first (one run per experiment and time: migration
    /// 004's UNIQUE); with `analysedOnly`, those that finished with a result (where the latest
    /// look is found however many runs failed or wait after it); with `before`, those scheduled
    /// before the run of that id (none if it is not the experiment's).
    public func runs(_ id: String, limit: Int = 100, analysedOnly: Bool = false, before: Int64? = nil) async throws -> [ExperimentRun] {
        guard ExperimentDefinition.isValidID(id) else { return [] }
        return try await pool.withConnection { connection in
            try connection.query("""
                SELECT \(unsafeSQL: Self.runColumns) FROM experiment_runs
                WHERE experiment_id = \(id) AND (NOT \(analysedOnly) OR (status = 'done' AND result IS NOT NULL))
                  AND (\(before)::int8 IS NULL
                       OR scheduled_for < (SELECT scheduled_for FROM experiment_runs WHERE id = \(before)::int8 AND experiment_id = \(id)))
                ORDER BY scheduled_for DESC LIMIT \(limit)
                """).rows.map(Self.run)
        }
    }

    static let runColumns = """
        id, experiment_id, scheduled_for, manual, status, lease_owner, lease_until, attempts, started_at, finished_at,
        decision, result, error
        """

    static func run(_ row: PostgresRow) throws -> ExperimentRun {
        guard let status = ExperimentRun.Status(rawValue: try row.decode(4)) else {
            throw PostgresError(kind: .decoding, message: "unknown run status")
        }
        return ExperimentRun(
            id: try row.decode(0), experimentID: try row.decode(1), scheduledFor: try row.timestamp(2), isManual: try row.decode(3),
            status: status, leaseOwner: try row.decode(5), leaseUntil: try row.optionalTimestamp(6), attempts: try row.decode(7),
            startedAt: try row.optionalTimestamp(8), finishedAt: try row.optionalTimestamp(9), decision: try row.decode(10),
            result: try row.decode(11, as: PostgresJSONB?.self)?.json, error: try row.decode(12))
    }
}

/// The experiments a listing read, and the ids of those whose stored definition it could not.
public struct ExperimentListing: Sendable, Equatable {
    public var records: [ExperimentRecord] = []
    public var unreadable: [String] = []
}
