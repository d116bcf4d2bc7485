import EngageCore
import EventStore
import Postgres

/// One analysis of one experiment: replays the experiment's events from the log, folds them per
/// notification, tallies the notifications by assigned arm, reads CUPED's pre-period covariates
/// (`PrePeriodReader`, at the same time) and runs `ExperimentAnalysis`.
///
/// The events are read through cursors ordered by notification, `chunkSize` rows at a time, so
/// that only one notification's state per connection is in memory besides the tallies. With
/// `lanes` above 1 (and a pool that large) the notifications are split into ranges read on that
/// many connections sharing one snapshot (`SplitReplay`); either way the replay sees one
/// consistent snapshot of the log and gives the same tallies.
public struct ExperimentRunner: Sendable {
    public let pool: ConnectionPool
    public var chunkSize: Int
    /// Connections reading at once, at most the pool's size.
    public var lanes: Int
    /// How long each of the analysis's reads may go without a result from the database before it
    /// is interrupted (`DatabaseDidNotAnswer`); nil: for ever. A pooled connection may still lead
    /// to a host that froze (a failover's old primary, which the kernel keeps answering for),
    /// where a read would otherwise wait as long as it stays frozen, holding its caller.
    public var silenceLimit: Duration?

    public init(pool: ConnectionPool, chunkSize: Int = 5_000, lanes: Int = 2, silenceLimit: Duration? = nil) {
        precondition(chunkSize > 0, "chunk size must be positive")
        precondition(lanes > 0, "a replay needs at least one lane")
        self.pool = pool
        self.chunkSize = chunkSize
        self.lanes = lanes
        self.silenceLimit = silenceLimit
    }

    /// What a replay found besides the analysis.
    public struct Outcome: Sendable {
        public var result: ExperimentRunResult
        public var tallies: ExperimentTallies
        /// Events replayed, undecodable ones included.
        public var events: Int
        /// Events read from the log by this analysis: `events` for a replay, only the new events
        /// folded for an incremental look.
        public var eventsRead: Int
        public var notifications: Int
        /// Stored events whose fields did not read as a valid event's (never expected; skipped).
        public var undecodable: Int
        /// Ranges of notifications the replay was read in (1: in one piece).
        public var ranges: Int
        /// An incremental look's `LogRewrite` generation: its analysis may be stored only while
        /// it is still the current one and no prune or restore is under way. nil for a replay.
        public var logGeneration: Int64?
    }

    /// Replays and analyses. `previousRuns` is the number of completed analyses before this one
    /// (it numbers the look); `now` is the analysis time.
    public func analyse(_ definition: ExperimentDefinition, previousRuns: Int, now: Timestamp) async throws -> Outcome {
        async let covariates = covariates(definition)
        let replay = try await replay(definition)
        return analyse(definition, replay, covariates: try await covariates, previousRuns: previousRuns, now: now)
    }

    /// Brings the experiment's incremental tallies up to date (`ExperimentTallyStore`: only the
    /// events since the last look are read, and written back with the checkpoint) and analyses
    /// them: the same outcome as `analyse`, which replays everything. Writes, so on the primary.
    ///
    /// Throws `ExperimentLookDeferred` while `engage log prune` or `restore` changes the log: the
    /// marker's generation is read before CUPED's pre-period and the fold start, so that the
    /// check where the analysis is stored (`Scheduler.finish`) covers both of their reads.
    public func look(_ definition: ExperimentDefinition, previousRuns: Int, now: Timestamp) async throws -> Outcome {
        let generation = try await pool.withConnection(silenceLimit: silenceLimit) { connection in
            let rewrite = try LogRewrite.state(on: connection)
            try ExperimentLookDeferred.check(rewrite, since: nil)
            return rewrite.generation
        }
        async let covariates = covariates(definition)
        let tallies = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: chunkSize, logGeneration: generation,
                                                          silenceLimit: silenceLimit)
        return analyse(definition, tallies, covariates: try await covariates, previousRuns: previousRuns, now: now)
    }

    private func analyse(_ definition: ExperimentDefinition, _ replay: ExperimentReplay, covariates: ExperimentCovariates?,
                         previousRuns: Int, now: Timestamp) -> Outcome {
        var result = ExperimentAnalysis.run(definition: definition, tallies: replay.tallies, covariates: covariates,
                                            now: now)
        // The analysis needs no memory of earlier runs: their number only names the look.
        result.look = previousRuns + 1
        return Outcome(result: result, tallies: replay.tallies, events: replay.events, eventsRead: replay.eventsRead,
                       notifications: replay.notifications, undecodable: replay.undecodable, ranges: replay.ranges,
                       logGeneration: replay.logGeneration)
    }

    /// CUPED's pre-period covariates (`PrePeriodReader`); nil with CUPED off or before a start.
    /// The window lies before the experiment, so it needs no snapshot shared with the replay, and
    /// it is read at the same time as the replay, on a connection of its own: with a pool of two,
    /// beside the replay's first lane, the second lane joining once the pre-period is read. The
    /// rows are summed per device after the connection is back in the pool, so that the second
    /// lane does not wait for that.
    func covariates(_ definition: ExperimentDefinition) async throws -> ExperimentCovariates? {
        guard definition.analysis.cupedPrePeriodDays != nil, definition.startAt != nil else { return nil }
        let rows = try await pool.withConnection(silenceLimit: silenceLimit) { connection in
            try PrePeriodReader.rows(definition, on: connection)
        }
        return try rows?.covariates()
    }

    /// The experiment's tallies as of one snapshot of the log.
    func replay(_ definition: ExperimentDefinition) async throws -> ExperimentReplay {
        let lanes = min(lanes, pool.size)
        if lanes > 1 {
            return try await SplitReplay.read(definition, lanes: lanes, chunkSize: chunkSize, pool: pool, silenceLimit: silenceLimit)
        }
        let chunkSize = chunkSize
        return try await pool.withTransaction(isolation: "REPEATABLE READ", silenceLimit: silenceLimit) { connection in
            try ExperimentReplay.read(definition, chunkSize: chunkSize, on: connection)
        }
    }

    /// Reads the replay's rows on one connection without decoding them and returns their number:
    /// what the database alone costs, the baseline `engage bench experiment` compares with.
    public func readRowsOnly(_ definition: ExperimentDefinition) async throws -> Int {
        let chunkSize = chunkSize
        return try await pool.withTransaction(isolation: "REPEATABLE READ") { connection in
            try connection.execute(ExperimentReplay.cursor(definition, range: .all))
            var rows = 0
            try connection.repeatUntilEmpty(ExperimentReplay.fetch(chunkSize: chunkSize)) { rows += $0.rowCount }
            try connection.execute("CLOSE experiment_replay")
            return rows
        }
    }
}
