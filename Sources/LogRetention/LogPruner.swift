import EngageCore
import EventStore
import Foundation
import Postgres
import Runtime

/// Removes the oldest weeks of the log (`engage log prune`): every partition wholly recorded
/// before the UTC midnight that starts the day `olderThan` ago, its days archived first if asked.
///
/// A partition goes whole: read once in the order its rows lie (archived or counted by day), its
/// ids leave `event_ids` in batches, then it is detached
/// concurrently (appends and readers of other weeks never wait for it) and dropped, so nothing
/// is left for vacuum in the log itself. A week that straddles the cut stays until the next
/// prune. The legacy partition of a log from before migration 010 is deleted from in batches
/// while it still holds days after the cut.
///
/// The cut never comes inside the idempotency window (`IdempotencyWindow`): a retry of a pruned
/// event could otherwise be stored again. Checks given by the caller (the read models have folded
/// what goes; no running experiment loses events) run first; any reason they give stops the prune.
/// Every step can be repeated: a prune cut short is finished by the next.
/// Reads and deletions go in batches with rests between (`DutyCycle`): on a machine ingestion keeps
/// busy, the prune takes longer rather than taking ingestion's cores.
public struct LogPruner: Sendable {
    /// Reasons the prune must not remove events recorded before the cut (empty: none).
    public typealias Check = @Sendable (_ connection: Connection, _ recordedBefore: Timestamp) throws -> [String]

    public struct Configuration: Sendable {
        public var olderThan: Duration
        public var window: IdempotencyWindow
        /// Directory the pruned days are archived to first; nil prunes without an archive.
        public var archiveDirectory: String?
        public var checks: [Check] = []
        /// Rows (ids, or the legacy partition's events) removed per transaction; also sets the blocks
        /// the archive reads per batch.
        public var batchRows = 20_000
        /// How hard the prune works: the share of the time it spends on batches (archive reads and
        /// id deletions alike), resting in between to leave the machine to ingestion.
        public var pace: DutyCycle = .standard
        /// Days of the legacy partition archived in one pass over it: a pass keeps a gzip file (a
        /// descriptor and about half a megabyte) open for each of its days, and a legacy partition
        /// can hold years of them.
        public var legacyDaysPerPass = 31
        /// Niceness the prune's own PostgreSQL backend is lowered to when the server runs on this
        /// machine and this process may change it (root, or the server's user); nil leaves it.
        /// A local server's backends share one scheduling group (see `ProcessPriority`), so this,
        /// not the prune process's own niceness, is what ranks the server's side of the prune
        /// below ingestion's backends when they contend for the CPU (at half of ingestion's
        /// maximum on 2 cores they seldom did: BENCHMARKS.md, 2026-12-03). The backend keeps it
        /// until its connection closes.
        public var backendNiceness: Int32?
        /// Drops what readers folded from the log by position (`engage log prune` passes the
        /// experiments' incremental tallies' reset), in the transaction that ends the prune's
        /// `LogRewrite`, when events left the log; nil drops nothing.
        public var resetReaders: LogRewrite.Reset?

        public init(olderThan: Duration, window: IdempotencyWindow, archiveDirectory: String? = nil) {
            self.olderThan = olderThan
            self.window = window
            self.archiveDirectory = archiveDirectory
        }
    }

    /// What a prune at this moment removes.
    public struct Plan: Sendable {
        /// The database's clock when planned.
        public var now: Timestamp
        /// Every event recorded before it goes.
        public var cut: Timestamp
        public var partitions: [Target]
        /// From PostgreSQL's statistics: about how many events go.
        public var estimatedEvents: Int { partitions.reduce(0) { $0 + $1.estimatedEvents } }
    }

    public struct Target: Sendable {
        public var partition: EventPartitions.Partition
        /// The whole partition goes; otherwise only its rows recorded before the cut.
        public var whole: Bool
        public var estimatedEvents: Int
    }

    public struct Progress: Sendable {
        public var events: Int
        public var total: Int
        /// `archive 2026-10-30`, `prune 2026-10-30`.
        public var step: String
    }

    public struct Report: Sendable {
        public var plan: Plan
        public var days: [Day]
        public var seconds: Double
        /// Partitions an earlier, interrupted prune had taken out of the log (or begun to) that
        /// this one finished detaching or dropped: their events left the log since that prune.
        public var finishedDetaches = 0
        /// What became of the backend's priority; nil when none was asked.
        public var backend: BackendPriority?
        /// What `Configuration.resetReaders` dropped (the experiments whose tallies went); 0 when
        /// it did not run.
        public var readersReset = 0
        public var events: Int { days.reduce(0) { $0 + $1.events } }
    }

    /// The prune's PostgreSQL backend and what lowering its priority did.
    public struct BackendPriority: Sendable, Equatable {
        public var pid: Int32
        /// nil: the server is not on this machine (not a Unix socket or loopback connection).
        public var outcome: ProcessPriority.Outcome?

        /// `PostgreSQL backend 4242 at niceness 10`, for the report.
        public func description(niceness: Int32) -> String {
            switch outcome {
            case .lowered?: "PostgreSQL backend \(pid) at niceness \(niceness)"
            case .alreadyLower(let current)?: "PostgreSQL backend \(pid) already at niceness \(current)"
            case .notPermitted?: "PostgreSQL backend \(pid) left at its priority (not permitted)"
            case .notFound?, nil: "PostgreSQL backend \(pid) not on this machine, left at its priority"
            }
        }
    }

    public struct Day: Sendable {
        public var day: Timestamp
        public var events: Int
        public var archiveFile: String?
        public var archiveBytes: Int?
    }

    public let pool: ConnectionPool
    public let configuration: Configuration
    public let logger: Logger

    public init(pool: ConnectionPool, configuration: Configuration, logger: Logger) {
        self.pool = pool
        self.configuration = configuration
        self.logger = logger
    }

    /// What `run` would remove now, without removing anything (the checks run too).
    public func plan() async throws -> Plan {
        try await pool.withConnection { connection in
            try RetentionLock.holding(on: connection) {
                let plan = try makePlan(on: connection)
                try runChecks(plan, on: connection)
                return plan
            }
        }
    }

    public func run(progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> Report {
        try await pool.withConnection { connection in
            try RetentionLock.holding(on: connection) {
                let stopwatch = Stopwatch()
                try connection.execute("SET application_name = 'engage log prune'")
                defer { _ = try? connection.execute("RESET application_name") }
                let backend = try configuration.backendNiceness.map { niceness in try lowerBackend(to: niceness, on: connection) }
                // Set by a prune or restore that died before its reset: the tallies may not be the
                // log's, so this prune drops them even if it removes nothing.
                let leftOver = try LogRewrite.state(on: connection).isUnderWay
                var rewriting = false
                // Committed before the first change of the log, so that no incremental look stores
                // a fold of a log this prune changed (`LogRewrite`).
                func beginRewrite() throws {
                    guard !rewriting else { return }
                    try LogRewrite.begin(.prune, on: connection)
                    rewriting = true
                }
                do {
                    // Taken over before anything can refuse this prune (its checks, the window, the
                    // archive): the dead command's reset is due whatever this prune goes on to do,
                    // and the catch below finishes it if this prune stops early.
                    if leftOver { try beginRewrite() }
                    let finishedDetaches = try InterruptedDetaches.finish(beforeChange: beginRewrite, logger: logger, on: connection)
                    let plan = try makePlan(on: connection)
                    try runChecks(plan, on: connection)
                    let archiveLock = try configuration.archiveDirectory.map { directory throws(LogRetentionError) in
                        try ArchiveLock(directory: directory)
                    }
                    defer { withExtendedLifetime(archiveLock) {} }
                    var archive = try configuration.archiveDirectory.map { directory throws(LogRetentionError) in
                        try ArchiveManifest.load(from: directory, creating: true)
                    }
                    var counter = ProgressCounter(total: plan.estimatedEvents, report: progress)
                    var days: [Day] = []
                    if !plan.partitions.isEmpty { try beginRewrite() }
                    for target in plan.partitions {
                        if target.whole {
                            days += try pruneWhole(target.partition, archive: &archive, counter: &counter, on: connection)
                        } else {
                            days += try pruneLegacy(target.partition, before: plan.cut, archive: &archive, counter: &counter, on: connection)
                        }
                    }
                    var report = Report(plan: plan, days: days, seconds: stopwatch.elapsed.seconds, finishedDetaches: finishedDetaches,
                                        backend: backend)
                    if rewriting || leftOver {
                        // Only when events left the log (now, or by a detach an interrupted prune
                        // began, or under a marker a dead command left): a prune of empty weeks
                        // keeps every look incremental.
                        let changed = report.events > 0 || finishedDetaches > 0 || leftOver
                        report.readersReset = try LogRewrite.end(reset: changed ? configuration.resetReaders : nil, on: connection)
                    }
                    logger.info("log.pruned", ["events": String(report.events), "days": String(days.count),
                                               "recorded.before": plan.cut.rfc3339, "seconds": String(format: "%.1f", report.seconds),
                                               "readers.reset": String(report.readersReset)])
                    return report
                } catch {
                    // Events may have left: drop the tallies and let looks go on. On a connection
                    // that is gone the marker stays, and looks wait for the next prune or restore.
                    if rewriting { _ = try? LogRewrite.end(reset: configuration.resetReaders, on: connection) }
                    throw error
                }
            }
        }
    }

    // MARK: The backend's priority

    /// Lowers the priority of this connection's backend if its server is on this machine; says
    /// so once, as a warning, when this process may not.
    private func lowerBackend(to niceness: Int32, on connection: Connection) throws -> BackendPriority {
        let row = try connection.query("""
            SELECT pg_backend_pid(), coalesce(inet_server_addr() <<= '127.0.0.0/8'::inet OR inet_server_addr() = '::1'::inet, true)
            """)[0]
        let pid = Int32(try row.decode(0, as: Int.self))
        guard try row.decode(1, as: Bool.self) else { return BackendPriority(pid: pid, outcome: nil) }
        let outcome = ProcessPriority.lower(process: pid, named: "postgres", to: niceness)
        if outcome == .notPermitted {
            logger.warning("log.prune-backend-priority-unchanged", [
                "backend.pid": String(pid), "niceness": String(niceness),
                "hint": "only root or the server's own user may lower a PostgreSQL backend's priority; the prune goes on at its priority",
            ])
        }
        return BackendPriority(pid: pid, outcome: outcome)
    }

    // MARK: Planning

    func makePlan(on connection: Connection) throws -> Plan {
        // Checked first: a cut further back would overflow the microseconds below.
        guard configuration.olderThan <= Self.longestOlderThan else {
            throw LogRetentionError.olderThanTooLong(requested: TimeSpan(configuration.olderThan).description,
                                                     longest: TimeSpan(Self.longestOlderThan).description)
        }
        let now = try Self.databaseNow(on: connection)
        let cut = Self.startOfUTCDay(now.adding(microseconds: -Self.microseconds(configuration.olderThan)))
        // The options' window, or the largest a running engage serve accepts if that is larger
        // (a server with a longer --max-past-days takes retries of older events).
        let window = IdempotencyWindow(limits: try IngestWindows.widening(configuration.window.limits, on: connection))
        let newestAllowed = now.adding(microseconds: -Self.microseconds(window.length))
        guard configuration.olderThan >= window.length, cut <= newestAllowed else {
            throw LogRetentionError.insideIdempotencyWindow(
                requested: TimeSpan(configuration.olderThan).description, minimum: TimeSpan(window.length).description,
                reason: Self.windowReason(window))
        }
        var targets: [Target] = []
        for partition in try EventPartitions.list(on: connection) where partition.lower.map({ $0 < cut }) ?? true {
            let whole = partition.upper <= cut
            // A week that straddles the cut stays whole until a later prune: deleting its older
            // rows would leave them dead for vacuum, what the weekly partitions are there to avoid.
            // Only the legacy partition (no lower bound) loses rows in batches.
            if !whole && partition.lower != nil { continue }
            let estimate = try Self.estimatedRows(of: partition.name, before: whole ? nil : cut, on: connection)
            if !whole && estimate == 0 { continue }
            targets.append(Target(partition: partition, whole: whole, estimatedEvents: estimate))
        }
        return Plan(now: now, cut: cut, partitions: targets)
    }

    /// Why the window is what it is, for the refusal.
    public static func windowReason(_ window: IdempotencyWindow) -> String {
        "ingestion accepts occurred_at up to \(TimeSpan(window.limits.maxPast)) in the past and \(TimeSpan(window.limits.maxFuture)) ahead, "
            + "after moving back the times of a device clock up to \(TimeSpan(ClockCorrection.largest)) ahead, "
            + "so a retry of an event recorded up to \(TimeSpan(window.length - IdempotencyWindow.clockMargin)) ago may still arrive and must be "
            + "found a duplicate; with \(TimeSpan(IdempotencyWindow.clockMargin)) of margin for clock differences, only events recorded "
            + "more than \(TimeSpan(window.length)) ago may go (--max-past-days, --max-future-minutes, or the largest window a running "
            + "engage serve records in ingest_windows)"
    }

    private func runChecks(_ plan: Plan, on connection: Connection) throws {
        guard !plan.partitions.isEmpty else { return }
        let reasons = try configuration.checks.flatMap { try $0(connection, plan.cut) }
        if !reasons.isEmpty { throw LogRetentionError.refused(reasons: reasons) }
    }

    /// PostgreSQL's estimate for a whole partition (no scan); an exact count of the legacy
    /// partition's rows before the cut.
    private static func estimatedRows(of partition: String, before cut: Timestamp?, on connection: Connection) throws -> Int {
        if let cut {
            return try connection.query("""
                SELECT count(*) FROM \(identifier: partition) WHERE recorded_at < \(PostgresTimestamp(cut))
                """)[0].decode(0, as: Int.self)
        }
        return try connection.query("""
            SELECT greatest(reltuples, 0)::int8 FROM pg_class WHERE oid = to_regclass(\(partition))
            """).rows.first?.decode(0, as: Int.self) ?? 0
    }

    // MARK: Pruning a whole partition

    private func pruneWhole(_ partition: EventPartitions.Partition, archive: inout ArchiveManifest?, counter: inout ProgressCounter,
                            on connection: Connection) throws -> [Day] {
        let name = partition.name
        let lastBlock = try Self.blockCount(of: name, on: connection)
        let pruned = try readDays(of: name, before: partition.upper, blocks: lastBlock, archive: &archive, counter: &counter, on: connection)
        counter.step = "prune \(name)"
        // The ids first: event_ids never holds an id whose event is gone, so a restore can trust it.
        var block: Int64 = 0
        while block < lastBlock {
            let stopwatch = Stopwatch()
            // An array, not IN (...): the planner would hash the batch and scan all of event_ids
            // for it; an array is looked up in the primary key, id by id.
            let deleted = try connection.execute("""
                DELETE FROM event_ids WHERE event_id = ANY(ARRAY(
                    SELECT event_id FROM \(identifier: name)
                    WHERE ctid >= format('(%s,0)', \(block)::int8)::tid AND ctid < format('(%s,0)', \(block + blocksPerBatch)::int8)::tid))
                """)
            block += blocksPerBatch
            counter.advance(by: deleted)
            configuration.pace.rest(afterWorking: stopwatch.elapsed)
        }
        try connection.execute("ALTER TABLE events DETACH PARTITION \(identifier: name) CONCURRENTLY")
        try connection.execute("DROP TABLE \(identifier: name)")
        logger.info("log.partition-pruned", ["partition": name, "events": String(pruned.reduce(0) { $0 + $1.events })])
        return pruned
    }

    // MARK: Pruning the legacy partition's oldest rows

    private func pruneLegacy(_ partition: EventPartitions.Partition, before cut: Timestamp, archive: inout ArchiveManifest?,
                             counter: inout ProgressCounter, on connection: Connection) throws -> [Day] {
        var pruned: [Day] = []
        // Oldest days first, at most `legacyDaysPerPass` UTC days a pass; each pass removes every
        // row before its own cut, so the next pass starts on a later day.
        while let oldest = try connection.query("""
            SELECT min(recorded_at) FROM \(identifier: partition.name) WHERE recorded_at < \(PostgresTimestamp(cut))
            """)[0].decode(0, as: PostgresTimestamp?.self) {
            let microsPerDay: Int64 = 86_400_000_000
            let micros = oldest.unixMicroseconds
            let midnight = micros - ((micros % microsPerDay) + microsPerDay) % microsPerDay
            let passCut = Timestamp(microsecondsSinceEpoch: midnight + Int64(max(configuration.legacyDaysPerPass, 1)) * microsPerDay)
            pruned += try pruneLegacyPass(partition, before: min(passCut, cut), archive: &archive, counter: &counter, on: connection)
        }
        return pruned
    }

    private func pruneLegacyPass(_ partition: EventPartitions.Partition, before cut: Timestamp, archive: inout ArchiveManifest?,
                                 counter: inout ProgressCounter, on connection: Connection) throws -> [Day] {
        // Rows lie in the order they were recorded: walk the blocks up to the last old row, each
        // batch taking its rows before the cut and their ids together.
        let lastBlock = try connection.query("""
            SELECT coalesce(max((ctid::text::point)[0])::int8 + 1, 0) FROM \(identifier: partition.name)
            WHERE recorded_at < \(PostgresTimestamp(cut))
            """)[0].decode(0, as: Int64.self)
        let pruned = try readDays(of: partition.name, before: cut, blocks: lastBlock, archive: &archive, counter: &counter, on: connection)
        counter.step = "prune \(partition.name) before \(ArchiveManifest.dayText(cut))"
        var block: Int64 = 0
        while block < lastBlock {
            let stopwatch = Stopwatch()
            let deleted = try connection.execute("""
                WITH gone AS (
                    DELETE FROM \(identifier: partition.name)
                    WHERE ctid >= format('(%s,0)', \(block)::int8)::tid AND ctid < format('(%s,0)', \(block + blocksPerBatch)::int8)::tid
                      AND recorded_at < \(PostgresTimestamp(cut))
                    RETURNING event_id
                )
                DELETE FROM event_ids WHERE event_id = ANY(ARRAY(SELECT event_id FROM gone))
                """)
            block += blocksPerBatch
            counter.advance(by: deleted)
            configuration.pace.rest(afterWorking: stopwatch.elapsed)
        }
        logger.info("log.legacy-pruned", ["recorded.before": cut.rfc3339, "days": String(pruned.count)])
        return pruned
    }

    /// The partition's days recorded before `bound`, read in one pass over its first `blocks`
    /// blocks: archived when asked (every file synced and in the manifest) and recorded in
    /// `log_pruned_days`, before any of their events go.
    ///
    /// A day the archive holds already keeps its file's events and gains the rows it lacks
    /// (`ArchiveMerge`), rather than being replaced by what the log holds of it now: less than
    /// the file after a prune of the legacy partition cut short, after a restore cut short, or
    /// when the restore found some of the day's ids taken by other events.
    private func readDays(of partition: String, before bound: Timestamp, blocks: Int64, archive: inout ArchiveManifest?,
                          counter: inout ProgressCounter, on connection: Connection) throws -> [Day] {
        let reader = PartitionReader(partition: partition, recordedBefore: bound, blocks: blocks, blocksPerBatch: blocksPerBatch,
                                     pace: configuration.pace)
        var read: [PartitionReader.DayRead]
        if let directory = configuration.archiveDirectory, var manifest = archive {
            counter.step = "archive \(partition)"
            counter.advance(by: 0)
            try ArchiveMerge.finishPending(in: directory, manifest: manifest)
            read = try reader.archive(into: directory, apart: Set(manifest.days.map(\.day)), on: connection)
            let merged = try ArchiveMerge.commit(read, into: &manifest, directory: directory)
            archive = manifest
            read = merged.days
            for (day, added) in merged.added.sorted(by: { $0.key < $1.key }) {
                logger.info("log.archive-merged", ["day": day, "added": String(added)])
            }
        } else {
            counter.step = "count \(partition)"
            read = try reader.countByDay(on: connection)
        }
        for day in read {
            try PrunedDays.record(day: day.day, events: day.events, archiveFile: day.entry?.file, archiveSHA256: day.entry?.sha256,
                                  on: connection)
        }
        return read.map { Day(day: $0.day, events: $0.events, archiveFile: $0.entry?.file, archiveBytes: $0.entry?.bytes) }
    }

    /// Blocks of a partition read or cleared per batch: about `batchRows` rows.
    private var blocksPerBatch: Int64 { Int64(max(1, configuration.batchRows / 20)) }

    // MARK: Steps

    static func blockCount(of table: String, on connection: Connection) throws -> Int64 {
        try connection.query("SELECT pg_relation_size(to_regclass(\(table))) / current_setting('block_size')::int8")[0]
            .decode(0, as: Int64.self)
    }

    static func databaseNow(on connection: Connection) throws -> Timestamp {
        Timestamp(microsecondsSinceEpoch: try connection.query("SELECT now()")[0].decode(0, as: PostgresTimestamp.self).unixMicroseconds)
    }

    static func startOfUTCDay(_ time: Timestamp) -> Timestamp {
        let day = Timestamp.microsecondsPerDay
        let micros = time.microsecondsSinceEpoch
        return Timestamp(microsecondsSinceEpoch: micros - ((micros % day) + day) % day)
    }

    /// The furthest back a prune cuts: 100 years, before any log engage wrote.
    public static let longestOlderThan: Duration = .seconds(36_500 * 86_400)

    static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}

/// Counts what a prune or restore did, against what it expects, for the caller's progress line.
struct ProgressCounter {
    var done = 0
    var total: Int
    var step = ""
    let report: @Sendable (LogPruner.Progress) -> Void

    init(total: Int, report: @escaping @Sendable (LogPruner.Progress) -> Void) {
        self.total = total
        self.report = report
    }

    mutating func advance(by count: Int) {
        done += count
        report(LogPruner.Progress(events: done, total: max(total, done), step: step))
    }
}

extension PostgresTimestamp {
    init(_ timestamp: Timestamp) {
        self.init(unixMicroseconds: timestamp.microsecondsSinceEpoch)
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
