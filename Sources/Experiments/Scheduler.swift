import EngageCore
import EventStore
import Foundation
import Postgres
import Runtime

/// Runs each running experiment's analysis on its cron schedule, once per scheduled time, across
/// any number of processes.
///
/// Every poll interval:
/// 1. for each running experiment, the most recent scheduled time after its last scheduled run
///    is inserted as a pending run (ON CONFLICT DO NOTHING on (experiment, time)): after downtime
///    that missed several times, ONE run catches up, not a burst, and two schedulers enqueueing
///    the same time make one row;
/// 2. due runs are claimed one at a time with `FOR UPDATE SKIP LOCKED`: pending ones, and running
///    ones whose lease expired (their scheduler died). Claiming sets a lease (owner, until) and
///    counts the attempt;
/// 3. the analysis runs while the lease is renewed every third of its duration (a renewal that
///    finds the lease gone cancels the analysis); its result is stored in a transaction that
///    first checks the lease is still this claim's (same owner, same attempt), appends the
///    decision to the event log and, when the decision ends the experiment, stops it. A
///    scheduler that lost its lease stores nothing. An incremental look folded while a prune or
///    restore changed the log (`LogRewrite`) stores nothing either: its run is given back and
///    tried again at the next poll (`ExperimentLookDeferred`).
///
/// A run that keeps failing is retried until `maxAttempts`, then marked failed. Once an
/// experiment's `stop_at` has passed, one last run is enqueued at that time (its analysis
/// decides `stop_no_effect: schedule_ended` unless an arm won) and no later ones.
public struct Scheduler: Service {
    public struct Configuration: Sendable {
        public var pollInterval = Duration.seconds(5)
        /// How long a claim is valid without renewal: how soon another scheduler retries the run
        /// of a scheduler that died. The lease is renewed every third of it while a run lasts.
        public var leaseDuration = Duration.seconds(60)
        public var maxAttempts = 3
        /// How long one database call of the scheduler's own (enqueue, claim, lease renewal,
        /// storing a result) may go without an answer before it is interrupted, its connection
        /// closed: a database that answers nothing (a frozen host, a network that drops
        /// everything) would otherwise hold the scheduler on that host for as long as it stays
        /// so, even after a failover to another. Each call takes milliseconds; counted once it
        /// has a connection (a wait for a busy pool is not the database gone). The analysis's
        /// reads have `analysisSilenceLimit` instead. `engage serve`'s pool is shared
        /// with the read routes, and a pool busy with long reads is not a database that does not
        /// answer (counted, it failed the scheduler's calls, each failed read of a claimed run
        /// costing the run an attempt: `BusyPoolSchedulerTests`). Past it the call throws
        /// `DatabaseDidNotAnswer`, and the next poll starts on a new connection (a failover's new
        /// primary, say).
        public var databaseAnswerLimit = Duration.seconds(30)
        /// How long each read of an analysis (a replay's lanes and chunks, CUPED's pre-period, an
        /// incremental look's fold) may go without a result from the database before it is
        /// interrupted and the run fails this attempt (`ExperimentRunner.silenceLimit`;
        /// `--analysis-silence`). A read of many statements may take long as a whole; but
        /// PostgreSQL sends nothing while one statement runs, so this also bounds each statement
        /// (CUPED's pre-period read is one, over the app's events of the window): hence half an
        /// hour. Without it, a pooled connection still leading to a host that froze (a failover's
        /// old primary) held the analysis, the scheduler and a stop of `engage serve` for as long
        /// as the host stayed frozen, while the lease was renewed on another connection.
        public var analysisSilenceLimit = Duration.seconds(1_800)
        /// Identifies this scheduler in `lease_owner`.
        public var ownerID = Scheduler.defaultOwnerID()
        /// Called at named points (`scheduler.after-claim`, `scheduler.after-analysis` (still
        /// under lease renewal), `scheduler.before-finish`); a test or
        /// `ENGAGE_FAILPOINTS` makes it crash or throw there, or a test holds the run there.
        public var failpoint: @Sendable (String) async throws -> Void = { _ in }
        public var chunkSize = 5_000
        /// Analyse with the experiment's incremental tallies (`ExperimentRunner.look`: only the
        /// events since the last look are read, on the primary, which they are written to)
        /// instead of replaying the whole experiment (on a replica when configured).
        public var incrementalLooks = false

        public init() {}
    }

    public let pool: ConnectionPool
    /// Where analyses replay the log: a read replica when one is configured and fresh enough,
    /// this pool otherwise. Runs are claimed, leased and stored on `pool` (the primary).
    public let reads: ReadDatabase
    public let configuration: Configuration
    /// Schedules are evaluated at its wall clock and analyses stamped with it; the poll interval
    /// and lease renewals wait on its monotonic clock.
    public let time: any TimeSource
    public let logger: Logger
    public let metrics: SchedulerMetrics
    private let undecodableDefinitions = UndecodableDefinitions()

    public init(pool: ConnectionPool, reads: ReadDatabase? = nil, configuration: Configuration = Configuration(),
                time: any TimeSource = SystemTime(), logger: Logger,
                metrics: SchedulerMetrics = SchedulerMetrics(registry: MetricsRegistry())) {
        self.pool = pool
        self.reads = reads ?? ReadDatabase(primary: pool)
        self.configuration = configuration
        self.time = time
        self.logger = logger
        self.metrics = metrics
    }

    /// host-pid-random, unique per scheduler instance.
    public static func defaultOwnerID() -> String {
        let random = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(random)"
    }

    public func run() async throws {
        logger.info("scheduler.started", ["owner": configuration.ownerID])
        while !Task.isCancelled {
            do {
                try await tick()
            } catch is CancellationError {
                break
            } catch let error as PostgresError where error.kind == .poolClosed {
                break
            } catch {
                logger.warning("scheduler.error", ["error": "\(error)"])
            }
            do {
                try await time.sleep(for: configuration.pollInterval)
            } catch {
                break
            }
        }
        logger.info("scheduler.stopped", ["owner": configuration.ownerID])
    }

    /// One poll: enqueue what is due, then claim and run due runs until none is left.
    /// Returns the number of runs this scheduler completed.
    @discardableResult
    public func tick() async throws -> Int {
        try await enqueueDue()
        var completed = 0
        // A run that failed is retried at the next poll, not at once: back to back, its attempts
        // would all fall into an outage of a few milliseconds and lose the look for good.
        var retryNextPoll: [Int64] = []
        while !Task.isCancelled, let claim = try await claimNext(excluding: retryNextPoll) {
            switch try await perform(claim) {
            case .stored: completed += 1
            case .notStored: retryNextPoll.append(claim.runID)
            // Given back while a prune or restore changes the log: claiming it again at once
            // would only defer it again, until the command ends. The next poll tries.
            case .deferred: return completed
            }
        }
        return completed
    }

    // MARK: Enqueue

    /// Inserts each running experiment's most recent due time; returns how many rows were new.
    @discardableResult
    public func enqueueDue() async throws -> Int {
        let now = time.wallClock
        return try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
            // The last run at or before now: a run enqueued while the wall clock was stepped
            // ahead would otherwise hold back every run until the real clock reached it. Times
            // already run conflict on the unique key below, so none runs twice.
            let rows = try connection.query("""
                SELECT e.definition,
                       (SELECT max(r.scheduled_for) FROM experiment_runs r
                        WHERE r.experiment_id = e.id AND NOT r.manual AND r.scheduled_for <= \(now.postgres)),
                       e.id
                FROM experiments e
                WHERE e.status = 'running'
                ORDER BY e.id
                """)
            var inserted = 0
            var undecodable: Set<String> = []
            defer { undecodableDefinitions.keepOnly(undecodable) }
            for row in rows.rows {
                let definition: ExperimentDefinition
                do {
                    definition = try ExperimentStore.definition(row, column: 0)
                } catch let error as PostgresError where error.kind == .decoding {
                    // One experiment the rules of this build refuse must not hold back the others.
                    let id = (try? row.decode(2, as: String.self)) ?? "?"
                    undecodable.insert(id)
                    if undecodableDefinitions.isNews(id, reason: "\(error)") {
                        logger.warning("scheduler.definition.undecodable", ["experiment": id, "error": "\(error)"])
                    }
                    continue
                }
                let last = try row.optionalTimestamp(1)
                if let stopAt = definition.stopAt, now >= stopAt, let last, last >= stopAt {
                    try Self.closeAfterFinalRun(definition, stopAt: stopAt, on: connection)
                    continue
                }
                // Before the first run, the first scheduled time at or after the start is due.
                let after = last ?? definition.startAt.map { $0.adding(microseconds: -1) }
                guard let due = definition.dueRun(after: after, now: now) else { continue }
                inserted += try connection.execute("""
                    INSERT INTO experiment_runs (experiment_id, scheduled_for)
                    VALUES (\(definition.id), \(due.postgres))
                    ON CONFLICT (experiment_id, scheduled_for) DO NOTHING
                    """)
            }
            return inserted
        }
    }

    /// A running experiment whose run at `stop_at` is over without stopping it (every attempt
    /// failed, or a scheduler whose clock was behind decided `continue`) has no later run to do
    /// so: it is stopped here, saying why. Nothing while that run is still pending or running.
    static func closeAfterFinalRun(_ definition: ExperimentDefinition, stopAt: Timestamp, on connection: Connection) throws {
        try connection.transaction { connection in
            guard try ExperimentStore.get(definition.id, app: nil, forUpdate: true, on: connection)?.status == .running,
                  let run = try connection.query("""
                      SELECT id, status, attempts, decision FROM experiment_runs
                      WHERE experiment_id = \(definition.id) AND scheduled_for = \(stopAt.postgres) AND NOT manual
                      """).rows.first
            else { return }
            let (id, status, attempts, decision) = (try run.decode(0, as: Int64.self), try run.decode(1, as: String.self),
                                                    try run.decode(2, as: Int.self), try run.decode(3, as: String?.self))
            let reason: String
            switch status {
            case "failed":
                reason = "the final run \(id) at stop_at failed after \(attempts) attempts; "
                    + "engage experiment run \(definition.id) analyses it"
            case "done":
                reason = "the final run \(id) at stop_at decided \(decision ?? "-"); the experiment reached its stop time"
            default:
                return
            }
            _ = try ExperimentStore.stop(definition.id, app: nil, reason: reason, on: connection)
        }
    }

    // MARK: Claim

    /// A run this scheduler holds the lease of, for one attempt.
    public struct Claim: Sendable, Equatable {
        public var runID: Int64
        public var experimentID: String
        public var scheduledFor: Timestamp
        public var attempt: Int
        public var isManual: Bool
    }

    /// Claims the earliest due run nobody else holds, other than `excluded`, or returns nil.
    public func claimNext(excluding excluded: [Int64] = []) async throws -> Claim? {
        let owner = configuration.ownerID
        let leaseMS = Self.milliseconds(configuration.leaseDuration)
        let maxAttempts = configuration.maxAttempts
        return try await pool.withTransaction(answerLimit: configuration.databaseAnswerLimit) { connection in
            // Runs whose schedulers died too often are given up rather than retried forever.
            try connection.execute("""
                UPDATE experiment_runs
                SET status = 'failed', finished_at = now(), lease_until = NULL,
                    error = coalesce(error, 'lease expired') || ' (gave up after ' || attempts || ' attempts)'
                WHERE status = 'running' AND lease_until < now() AND attempts >= \(maxAttempts)
                """)
            let rows = try connection.query("""
                UPDATE experiment_runs r
                SET status = 'running', lease_owner = \(owner),
                    lease_until = now() + \(leaseMS) * interval '1 millisecond',
                    attempts = r.attempts + 1, started_at = now()
                WHERE r.id = (
                    SELECT id FROM experiment_runs
                    WHERE (status = 'pending' OR (status = 'running' AND lease_until < now()))
                      AND NOT (id = ANY(\(excluded)))
                    ORDER BY scheduled_for, id
                    LIMIT 1
                    FOR UPDATE SKIP LOCKED)
                RETURNING r.id, r.experiment_id, r.scheduled_for, r.attempts, r.manual
                """)
            return try rows.rows.first.map(Self.claim)
        }
    }

    /// Claims one given pending run (a manual run just inserted).
    func claim(runID: Int64) async throws -> Claim? {
        let owner = configuration.ownerID
        let leaseMS = Self.milliseconds(configuration.leaseDuration)
        return try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
            try connection.query("""
                UPDATE experiment_runs
                SET status = 'running', lease_owner = \(owner),
                    lease_until = now() + \(leaseMS) * interval '1 millisecond',
                    attempts = attempts + 1, started_at = now()
                WHERE id = \(runID) AND status = 'pending'
                RETURNING id, experiment_id, scheduled_for, attempts, manual
                """).rows.first.map(Self.claim)
        }
    }

    private static func claim(_ row: PostgresRow) throws -> Claim {
        Claim(runID: try row.decode(0), experimentID: try row.decode(1), scheduledFor: try row.timestamp(2), attempt: try row.decode(3),
              isManual: try row.decode(4))
    }

    // MARK: Execute

    /// Analyses the claimed run and stores the outcome if the lease is still this claim's.
    /// Returns true when this scheduler stored a result.
    public func execute(_ claim: Claim) async throws -> Bool {
        try await perform(claim) == .stored
    }

    /// What became of a claimed run.
    enum Performed: Equatable {
        case stored
        /// Failed (given back or failed for good), or the lease was lost.
        case notStored
        /// An incremental look during a prune or restore (`ExperimentLookDeferred`): given back
        /// without counting the attempt.
        case deferred
    }

    private func perform(_ claim: Claim) async throws -> Performed {
        do {
            return try await analyseAndStore(claim)
        } catch _ where Task.isCancelled {
            // Stopped (SIGTERM) while it held the run: given back now, its attempt uncounted.
            // Left claimed, it waited out its lease, and a rolling restart during long analyses
            // failed it for good after three attempts.
            await giveBackOnShutdown(claim)
            throw CancellationError()
        }
    }

    private func analyseAndStore(_ claim: Claim) async throws -> Performed {
        let stopwatch = Stopwatch()
        try await configuration.failpoint("scheduler.after-claim")
        let record: ExperimentRecord
        let outcome: ExperimentRunner.Outcome
        let source: ReadSource
        do {
            let found = try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
                try ExperimentStore.get(claim.experimentID, app: nil, on: connection)
            }
            guard let found else { throw ExperimentStoreError.notFound(claim.experimentID) }
            // Stopped since the run was queued: a look would add a decision to a finished
            // experiment (checked again as the result is stored, for a stop during the analysis).
            // A run asked for by hand is analysed whatever the status.
            guard claim.isManual || found.status == .running else {
                if try await end(claim, error: Self.notAnalysed(found.status), final: true) {
                    skipped(claim, status: found.status)
                } else {
                    lostLease(claim, during: "skip")
                }
                return .notStored
            }
            record = found
            let previous = try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
                try connection.query("""
                    SELECT count(*) FROM experiment_runs WHERE experiment_id = \(claim.experimentID) AND status = 'done'
                    """)[0].decode(0, as: Int.self)
            }
            let chunkSize = configuration.chunkSize, silenceLimit = configuration.analysisSilenceLimit
            (outcome, source) = try await whileRenewingLease(claim) {
                let analysed: (ExperimentRunner.Outcome, ReadSource)
                if configuration.incrementalLooks {
                    analysed = (try await ExperimentRunner(pool: pool, chunkSize: chunkSize, silenceLimit: silenceLimit)
                        .look(record.definition, previousRuns: previous, now: time.wallClock), .primary)
                } else {
                    let read = try await reads.read { pool in
                        try await ExperimentRunner(pool: pool, chunkSize: chunkSize, silenceLimit: silenceLimit)
                            .analyse(record.definition, previousRuns: previous, now: time.wallClock)
                    }
                    analysed = (read.value, read.source)
                }
                try await configuration.failpoint("scheduler.after-analysis")
                return analysed
            }
            try await configuration.failpoint("scheduler.before-finish")
        } catch _ where Task.isCancelled {
            // Stopped, whatever the interrupted call threw: no failed attempt (`perform`).
            throw CancellationError()
        } catch let lost as LeaseLost {
            lostLease(claim, during: lost.during)
            return .notStored
        } catch let deferred as ExperimentLookDeferred {
            return try await giveBack(claim, deferred)
        } catch {
            let failed = try await fail(claim, error: "\(error)")
            (failed ? metrics.failed : metrics.retried).increment()
            logger.warning("scheduler.run.error", ["experiment": claim.experimentID, "run.id": String(claim.runID),
                                                   "attempt": String(claim.attempt), "final": String(failed), "error": "\(error)"])
            return .notStored
        }
        let finished: Finished
        do {
            finished = try await store(claim, outcome.result, appID: record.definition.appID, readFrom: source,
                                       logGeneration: outcome.logGeneration)
        } catch let deferred as ExperimentLookDeferred {
            return try await giveBack(claim, deferred)
        }
        if case .skipped(let status) = finished {
            skipped(claim, status: status)
            return .notStored
        }
        let stored = finished == .stored
        if stored {
            metrics.done.increment()
            metrics.runSeconds.observe(stopwatch.elapsed)
            metrics.events.increment(by: outcome.eventsRead)
            logger.info("scheduler.run.done", [
                "experiment": claim.experimentID, "run.id": String(claim.runID), "scheduled.for": claim.scheduledFor.rfc3339,
                "decision": outcome.result.decision.code, "event.count": String(outcome.events),
                "notification.count": String(outcome.notifications), "duration.ms": stopwatch.millisecondsText,
                "read.from": source.database.rawValue, "read.lag.s": source.lagSeconds,
            ])
        } else {
            lostLease(claim, during: "finish")
        }
        return stored ? .stored : .notStored
    }

    /// Gives a deferred look's run back as pending, its attempt uncounted (a prune may outlast
    /// every attempt) and the reason in its `error` until it is done; says so once per deferral.
    private func giveBack(_ claim: Claim, _ deferred: ExperimentLookDeferred) async throws -> Performed {
        guard try await release(claim, reason: deferred.description) else {
            lostLease(claim, during: "deferral")
            return .notStored
        }
        metrics.deferred.increment()
        logger.warning("scheduler.run.deferred", ["experiment": claim.experimentID, "run.id": String(claim.runID),
                                                  "reason": deferred.code, "log.rewrite": deferred.command ?? "-",
                                                  "detail": deferred.description])
        if deferred.reason == .rewriteUnderWay {
            try await endAbandonedRewrite()
        }
        return .deferred
    }

    /// A marker whose prune or restore died (Ctrl-C, a lost connection) would defer every look
    /// for good: finished here as the command would have (every experiment's tallies dropped,
    /// the marker cleared) once no command holds the lock they all hold while they run. The
    /// deferred run is looked at again at the next poll, from the log's start.
    private func endAbandonedRewrite() async throws {
        let ended = try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
            try LogRewrite.endIfAbandoned(reset: ExperimentTallyStore.resetEveryExperiment, on: connection)
        }
        if ended {
            logger.warning("scheduler.log-rewrite.abandoned", [
                "detail": "a prune or restore of the log died before its reset: every experiment's tallies were dropped and the marker cleared",
            ])
        }
    }

    /// The lease of a claim was found taken over (expired and claimed again, or the run removed).
    struct LeaseLost: Error {
        var during: String
    }

    /// Makes the claimed run pending again with its attempt uncounted and `reason` in its
    /// `error` (until it is done); false when the lease is no longer this claim's.
    private func release(_ claim: Claim, reason: String) async throws -> Bool {
        let owner = configuration.ownerID
        return try await pool.withTransaction(answerLimit: configuration.databaseAnswerLimit) { connection in
            guard try Self.holdsLease(claim, owner: owner, on: connection) else { return false }
            try connection.execute("""
                UPDATE experiment_runs
                SET status = 'pending', lease_until = NULL, attempts = attempts - 1, error = \(reason)
                WHERE id = \(claim.runID)
                """)
            return true
        }
    }

    /// Gives the run back as the scheduler stops, in a task of its own (the stopping one is
    /// cancelled, and the pool interrupts a cancelled task's statements), awaited for at most
    /// `giveBackLimit`: a stuck commit holding the run's row, or a frozen host, would otherwise
    /// hold the shutdown past its bound. Not given back, the run's lease runs out as after a crash.
    private func giveBackOnShutdown(_ claim: Claim) async {
        let outcome = await Task { () -> Result<Bool?, any Error> in
            do {
                return .success(try await withTimeLimit(Self.giveBackLimit) {
                    try await release(claim, reason: "given back: the scheduler stopped during the analysis")
                })
            } catch {
                return .failure(error)
            }
        }.value
        var fields = ["experiment": claim.experimentID, "run.id": String(claim.runID)]
        switch outcome {
        case .success(true?):
            logger.notice("scheduler.run.given-back", fields)
            return
        // Stored by a commit whose answer the stop cut off, or taken over: nothing to give back.
        case .success(false?): fields["reason"] = "no longer this claim's"
        case .success(nil): fields["reason"] = "no answer within \(Self.giveBackLimit); its lease runs out"
        case .failure(let error): fields["reason"] = "\(error)"
        }
        logger.notice("scheduler.run.not-given-back", fields)
    }

    /// How long a stopping scheduler tries to give its run back.
    static let giveBackLimit: Duration = .seconds(2)

    /// Runs `analysis` while renewing the claim's lease every third of its duration; a renewal
    /// that finds the lease gone cancels the analysis and throws `LeaseLost`.
    private func whileRenewingLease<T: Sendable>(_ claim: Claim, _ analysis: @escaping @Sendable () async throws -> T) async throws -> T {
        let period = configuration.leaseDuration / 3
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await analysis() }
            group.addTask {
                while true {
                    try await time.sleep(for: period)
                    guard try await renewLease(claim) else { throw LeaseLost(during: "analysis") }
                }
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let value = next { return value }
            }
            throw CancellationError()
        }
    }

    /// Extends the claim's lease from now; false when it is no longer this claim's.
    func renewLease(_ claim: Claim) async throws -> Bool {
        let owner = configuration.ownerID
        let leaseMS = Self.milliseconds(configuration.leaseDuration)
        return try await pool.withConnection(answerLimit: configuration.databaseAnswerLimit) { connection in
            try connection.execute("""
                UPDATE experiment_runs SET lease_until = now() + \(leaseMS) * interval '1 millisecond'
                WHERE id = \(claim.runID) AND status = 'running' AND lease_owner = \(owner) AND attempts = \(claim.attempt)
                """) == 1
        }
    }

    /// Stores the result in one transaction that re-checks the lease, appends the decision to the
    /// log and stops a running experiment the decision ends; false when the lease was lost. The
    /// stored result says where the replay read the log (a `read_from` member beside the
    /// analysis's own); the log's entry holds the analysis alone.
    ///
    /// An incremental look's result (`logGeneration` set) is stored only if no prune or restore
    /// is under way or began since the look read the marker (`LogRewrite`): otherwise this throws
    /// `ExperimentLookDeferred` and stores nothing. The check needs no lock: a change of the log
    /// the look could have read committed after the command's begin, which this transaction,
    /// begun after the look, sees; a command that begins after this check changed nothing the
    /// look read.
    func finish(_ claim: Claim, _ result: ExperimentRunResult, appID: String, readFrom: ReadSource = .primary,
                logGeneration: Int64? = nil) async throws -> Bool {
        try await store(claim, result, appID: appID, readFrom: readFrom, logGeneration: logGeneration) == .stored
    }

    /// What became of a result to store.
    enum Finished: Equatable {
        case stored
        case leaseLost
        /// Not stored: a scheduled run of an experiment no longer running (the run is closed).
        case skipped(ExperimentStatus)
    }

    /// Why a scheduled run was closed without its analysis.
    static func notAnalysed(_ status: ExperimentStatus) -> String {
        "not analysed: the experiment is no longer running (\(status.rawValue)), and a scheduled run is analysed only while it runs"
    }

    /// A claim found taken over (its lease expired and claimed again) at `during`.
    private func lostLease(_ claim: Claim, during: String) {
        metrics.leaseLost.increment()
        logger.warning("scheduler.run.lease-lost", ["experiment": claim.experimentID, "run.id": String(claim.runID),
                                                    "attempt": String(claim.attempt), "during": during])
    }

    private func skipped(_ claim: Claim, status: ExperimentStatus) {
        metrics.skipped.increment()
        logger.info("scheduler.run.skipped", ["experiment": claim.experimentID, "run.id": String(claim.runID),
                                              "scheduled.for": claim.scheduledFor.rfc3339, "status": status.rawValue])
    }

    private func store(_ claim: Claim, _ result: ExperimentRunResult, appID: String, readFrom: ReadSource,
                       logGeneration: Int64?) async throws -> Finished {
        let owner = configuration.ownerID
        let json = PostgresJSONB(readFrom.addingMember(to: result.canonicalJSON))
        let decision = result.decision.code
        let entry = ExperimentLogEntry.analysed(result, appID: appID, runID: claim.runID, scheduledFor: claim.scheduledFor,
                                                isManual: claim.isManual)
        let finished = try await pool.withTransaction(answerLimit: configuration.databaseAnswerLimit) { connection -> (Finished, stopped: Bool) in
            guard try Self.holdsLease(claim, owner: owner, on: connection) else { return (.leaseLost, false) }
            if let logGeneration {
                try ExperimentLookDeferred.check(try LogRewrite.state(on: connection), since: logGeneration)
            }
            // Locked until this commits: a stop either came first, and a scheduled run's result is
            // not stored, or comes after the result, as the log then says.
            let experiment = try ExperimentStore.get(claim.experimentID, app: nil, forUpdate: true, on: connection)
            if !claim.isManual, let status = experiment?.status, status != .running {
                try connection.execute("""
                    UPDATE experiment_runs
                    SET status = 'failed', finished_at = now(), lease_until = NULL, error = \(Self.notAnalysed(status))
                    WHERE id = \(claim.runID)
                    """)
                return (.skipped(status), false)
            }
            try connection.execute("""
                UPDATE experiment_runs
                SET status = 'done', finished_at = now(), lease_until = NULL, decision = \(decision), result = \(json), error = NULL
                WHERE id = \(claim.runID)
                """)
            try ExperimentLog.append(entry, on: connection)
            guard result.decision.isFinal, experiment?.status == .running else { return (.stored, false) }
            _ = try ExperimentStore.stop(claim.experimentID, app: nil, reason: Self.stopReason(result, runID: claim.runID),
                                         on: connection)
            return (.stored, true)
        }
        if finished.stopped {
            logger.info("scheduler.experiment.stopped", ["experiment": claim.experimentID, "run.id": String(claim.runID),
                                                         "decision": decision])
        }
        return finished.0
    }

    /// Why a decision stopped an experiment, as logged with the `stopped` entry.
    static func stopReason(_ result: ExperimentRunResult, runID: Int64) -> String {
        switch result.decision {
        case .continue: "run \(runID) decided to continue"
        case .ship(let arm): "run \(runID) decided: ship \(arm)"
        case .stopNoEffect(let reason): "run \(runID) decided: stop, no effect (\(reason.rawValue))"
        case .invalidSampleRatioMismatch: "run \(runID) found a sample ratio mismatch"
        }
    }

    /// Gives the run back for a retry, or marks it failed after the last attempt; returns
    /// whether it failed for good.
    private func fail(_ claim: Claim, error: String) async throws -> Bool {
        let isFinal = claim.attempt >= configuration.maxAttempts
        try await end(claim, error: error, final: isFinal)
        return isFinal
    }

    /// Ends a claimed run without a result, if its lease is still this claim's: pending again to be
    /// tried later, or failed for good with `error`. False when the lease was no longer this claim's.
    @discardableResult
    private func end(_ claim: Claim, error: String, final isFinal: Bool) async throws -> Bool {
        let owner = configuration.ownerID
        return try await pool.withTransaction(answerLimit: configuration.databaseAnswerLimit) { connection in
            guard try Self.holdsLease(claim, owner: owner, on: connection) else { return false }
            try connection.execute("""
                UPDATE experiment_runs
                SET status = \(isFinal ? "failed" : "pending"), lease_until = NULL, error = \(error),
                    finished_at = CASE WHEN \(isFinal) THEN now() END
                WHERE id = \(claim.runID)
                """)
            return true
        }
    }

    /// Locks the run row and checks it is still running under this claim.
    private static func holdsLease(_ claim: Claim, owner: String, on connection: Connection) throws -> Bool {
        let rows = try connection.query("""
            SELECT 1 FROM experiment_runs
            WHERE id = \(claim.runID) AND status = 'running' AND lease_owner = \(owner) AND attempts = \(claim.attempt)
            FOR UPDATE
            """)
        return !rows.isEmpty
    }

    // MARK: Manual runs

    /// Analyses an experiment now, outside its schedule, and returns the stored run.
    ///
    /// Each of its own database calls takes at most `databaseAnswerLimit` once it has its
    /// connection, as the scheduler's others do: a primary waiting at the COMMIT for a synchronous
    /// standby it lost would otherwise hold the caller (a request, `engage experiment run`) for as
    /// long. Past it before the run's insert was sent, nothing was queued (`DatabaseDidNotAnswer`);
    /// from the insert on, the run is queued or may be (`ManualRunUnanswered`: an insert whose
    /// COMMIT was interrupted is made on the primary), and a scheduler analyses a queued run later.
    /// The analysis itself is not cut short by the limit: as a scheduled run's, it lasts as long
    /// as its lease is renewed (`whileRenewingLease`), each renewal bounded by the limit.
    public func runNow(experimentID: String, app: String? = nil) async throws -> ExperimentRun {
        let limit = configuration.databaseAnswerLimit
        let found = try await pool.withConnection(answerLimit: limit) { connection in
            try ExperimentStore.get(experimentID, app: app, on: connection)
        }
        guard let found else { throw ExperimentStoreError.notFound(experimentID) }
        let now = time.wallClock
        let runID: Int64
        do {
            runID = try await pool.withConnection(answerLimit: limit) { connection in
                // A run already at this microsecond (a scheduled one, or a manual one asked for
                // elsewhere at once) takes it: this one takes the next free one. A time the
                // schedule may still want (a whole minute, `stop_at`) is left to it.
                for offset in 0..<Int64(Self.manualRunSlots) {
                    let at = now.adding(microseconds: offset)
                    if Self.mayBeScheduled(at, stopAt: found.definition.stopAt) { continue }
                    let rows = try connection.query("""
                        INSERT INTO experiment_runs (experiment_id, scheduled_for, manual)
                        VALUES (\(experimentID), \(at.postgres), true)
                        ON CONFLICT (experiment_id, scheduled_for) DO NOTHING
                        RETURNING id
                        """)
                    if let row = rows.rows.first { return try row.decode(0, as: Int64.self) }
                }
                throw ExperimentStoreError(code: .invalidTransition, experimentID: experimentID, detail:
                    "runs of \(experimentID) already take \(now.rfc3339) and the \(Self.manualRunSlots - 1) microseconds after it; ask again")
            }
        } catch let error where Self.leftUnanswered(error) {
            throw ManualRunUnanswered(experimentID: experimentID, runID: nil, cause: "\(error)")
        }
        do {
            // A scheduler may have claimed it first; either way it is run once.
            if let claim = try await claim(runID: runID) { _ = try await execute(claim) }
            return try await pool.withConnection(answerLimit: limit) { connection in
                try ExperimentStore.run(connection.query(
                    "SELECT \(unsafeSQL: ExperimentStore.runColumns) FROM experiment_runs WHERE id = \(runID)")[0])
            }
        } catch let error where !(error is CancellationError) {
            // Queued whatever failed after the insert (a refusal by the server as much as no
            // answer): answered as anything else, it would read "nothing stored".
            throw ManualRunUnanswered(experimentID: experimentID, runID: runID, cause: "\(error)")
        }
    }

    /// Whether `error` ended the insert without the database's answer (past the limit, the
    /// connection lost, interrupted or shut by the server): the insert may have been made. A
    /// refusal by the server, or a cancellation, is passed on as it is.
    static func leftUnanswered(_ error: any Error) -> Bool {
        if error is DatabaseDidNotAnswer { return true }
        guard let error = error as? PostgresError else { return false }
        return error.kind == .connection || error.kind == .interrupted || error.isConnectionProblem
    }

    /// How many microseconds from its time a manual run looks for one no other run of the
    /// experiment has.
    static let manualRunSlots = 1_000

    /// Whether the schedule may queue a run at `time`: its times are whole minutes, and `stop_at`.
    static func mayBeScheduled(_ time: Timestamp, stopAt: Timestamp?) -> Bool {
        time == stopAt || time.microsecondsSinceEpoch % 60_000_000 == 0
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
