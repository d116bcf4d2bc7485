import EngageCore
import EventStore
import Foundation
import Postgres
import Runtime

/// Loads an archive written by `engage log prune --archive` back into the log
/// (`engage log restore`), idempotently: an event the log holds already is skipped, so restoring
/// twice, or into a log that still holds some of the archived days, stores nothing twice.
///
/// Every file's SHA-256 and size are checked against the manifest before anything is loaded.
/// Events of a day pruned from this log go back to their place in it (their position and
/// transaction id), behind the read models' checkpoints: a read model that counted them before
/// they were pruned still counts them, one rebuilt since counts them after the next rebuild.
/// Events of a day never pruned here (an archive of another database) were never counted here:
/// they are placed at the head of the log, where tailing readers fold them, as is an event whose
/// transaction id lies ahead of this database's. Kept in their place, events with older ids
/// would lie behind every checkpoint and never be counted.
public struct LogRestorer: Sendable {
    /// The file that makes a directory an archive `engage log prune` wrote.
    public static let manifestFileName = ArchiveManifest.fileName

    public struct Day: Sendable {
        public var day: Timestamp
        public var inArchive: Int
        public var restored: Int
        /// Already in the log.
        public var present: Int
        /// Another event in the log has the same id.
        public var conflicting: Int
        /// The read models were rebuilt without this day after it was pruned, and not since it came
        /// back: its events lie behind their checkpoints, and only a rebuild counts them.
        public var rebuiltWithout: Bool
    }

    public struct Report: Sendable {
        public var days: [Day]
        public var seconds: Double
        public var restored: Int { days.reduce(0) { $0 + $1.restored } }
        public var present: Int { days.reduce(0) { $0 + $1.present } }
        public var conflicting: Int { days.reduce(0) { $0 + $1.conflicting } }
        /// Days the read models miss until they are rebuilt: whether this restore or an earlier
        /// one (cut short, or run before) put their events back.
        public var daysToRebuild: [Day] { days.filter(\.rebuiltWithout) }
        /// What `resetReaders` dropped (the experiments whose tallies went); 0 when it did not run.
        public var readersReset = 0
    }

    public let pool: ConnectionPool
    public let directory: String
    /// Archived events loaded per transaction.
    public var batchRows = 50_000
    /// Bytes of the longest line a file may hold (`ArchiveLine.maxBytes`).
    var maxLineBytes = ArchiveLine.maxBytes
    /// Drops what readers folded from the log by position (`engage log restore` passes the
    /// experiments' incremental tallies' reset), in the transaction that ends the restore's
    /// `LogRewrite`, when the archive's events are in the log; nil drops nothing.
    public var resetReaders: LogRewrite.Reset?
    public let logger: Logger

    public init(pool: ConnectionPool, directory: String, logger: Logger) {
        self.pool = pool
        self.directory = directory
        self.logger = logger
    }

    /// Checks every file against the manifest; returns how many events the archive holds.
    public func verify() throws -> Int {
        let manifest = try ArchiveManifest.load(from: directory, creating: false)
        var total = 0
        for entry in manifest.days {
            let path = directory + "/" + entry.file
            guard FileManager.default.fileExists(atPath: path) else {
                throw LogRetentionError.corruptArchive(file: path, problem: "missing; nothing was restored")
            }
            let (sha256, bytes) = try sha256OfFile(path)
            guard bytes == entry.bytes, sha256 == entry.sha256 else {
                throw LogRetentionError.corruptArchive(
                    file: path, problem: "its SHA-256 or size does not match the manifest (changed or damaged since it was written); nothing was restored")
            }
            // Its lines' lengths and number, before any day is loaded: a file with a line no event
            // can make (one with no newline at all, inflating without end), or with another number
            // of events than the manifest says (its counts are the manifest's word, which no
            // checksum covers), refuses the whole archive. Found only once its day was loaded, a
            // wrong count stopped every rerun there, and the days after it never came back.
            var lines = 0
            try ArchiveMerge.forEachLine(of: path, maxLineBytes: maxLineBytes, outcome: "nothing was restored") { _ in lines += 1 }
            guard lines == entry.events else {
                throw LogRetentionError.corruptArchive(
                    file: path, problem: "it holds \(lines) events, the manifest says \(entry.events); nothing was restored")
            }
            total += lines
        }
        return total
    }

    public func run(progress: @escaping @Sendable (LogPruner.Progress) -> Void = { _ in }) async throws -> Report {
        try await pool.withConnection { connection in
            try RetentionLock.holding(on: connection) {
                // A directory that is no archive is refused before anything is made in it.
                _ = try ArchiveManifest.load(from: directory, creating: false)
                let archiveLock = try ArchiveLock(directory: directory)
                defer { withExtendedLifetime(archiveLock) {} }
                // A prune cut short between saving the manifest and moving a merged day's file into
                // place left that to do (`ArchiveMerge`); under the lock, so no prune is merging.
                // Leftovers it never reads (pass files, merges the manifest does not name) stay for
                // the next prune: the archive may be mounted read-only for a restore.
                try ArchiveMerge.finishPending(in: directory, manifest: try ArchiveManifest.load(from: directory, creating: false),
                                               removingLeftovers: false)
                let total = try verify()
                let manifest = try ArchiveManifest.load(from: directory, creating: false)
                let stopwatch = Stopwatch()
                try connection.execute("SET DateStyle = 'ISO, YMD'")
                defer { _ = try? connection.execute("RESET DateStyle") }
                var counter = ProgressCounter(total: total, report: progress)
                var days: [Day] = []
                // A marker a dead prune or restore left: its reset is this restore's to do.
                let leftOver = try LogRewrite.state(on: connection).isUnderWay
                // Committed before the first event comes back, so that no incremental look stores
                // a fold of a log this restore changed (`LogRewrite`).
                try LogRewrite.begin(.restore, on: connection)
                do {
                    // A prune killed after it began detaching a week, before it dropped it: the
                    // week's name is taken, and its days' events would find no partition.
                    _ = try InterruptedDetaches.finish(beforeChange: {}, logger: logger, on: connection)
                    for entry in manifest.days {
                        guard let day = ArchiveManifest.timestamp(ofDay: entry.day) else { continue }
                        counter.step = "restore \(entry.day)"
                        days.append(try restore(entry, day: day, counter: &counter, on: connection))
                    }
                    var report = Report(days: days, seconds: stopwatch.elapsed.seconds)
                    // Also when every event was already back: a rerun after a reset that failed
                    // finishes it.
                    let inTheLog = report.restored + report.present > 0 || leftOver
                    report.readersReset = try LogRewrite.end(reset: inTheLog ? resetReaders : nil, on: connection)
                    logger.info("log.restored", ["events": String(report.restored), "present": String(report.present),
                                                 "conflicting": String(report.conflicting), "days": String(days.count),
                                                 "readers.reset": String(report.readersReset)])
                    return report
                } catch {
                    // Events may be back: drop the tallies and let looks go on. On a connection
                    // that is gone the marker stays, and looks wait for the next prune or restore.
                    _ = try? LogRewrite.end(reset: resetReaders, on: connection)
                    throw error
                }
            }
        }
    }

    private func restore(_ entry: ArchiveManifest.Day, day: Timestamp, counter: inout ProgressCounter,
                         on connection: Connection) throws -> Day {
        let path = directory + "/" + entry.file
        try EventPartitions.ensure(day: day, on: connection)
        var result = Day(day: day, inArchive: 0, restored: 0, present: 0, conflicting: 0, rebuiltWithout: false)
        // The prune records its day before any event goes (`PrunedDays.record`).
        let prunedHere = try PrunedDays.all(on: connection).contains { $0.day == day }
        let reader = try GzipFileReader(path: path)
        var pending: [UInt8] = []
        var pendingRows = 0
        func load(_ rows: ArraySlice<UInt8>) throws {
            let counts = try loadChunk(Array(rows), day: day, file: path, keepingPlaces: prunedHere, on: connection)
            result.inArchive += counts.rows
            result.present += counts.rows - counts.candidates
            result.conflicting += counts.candidates - counts.stored
            result.restored += counts.stored
            counter.advance(by: counts.rows)
        }
        // Where the line being read began in `pending`: `verify` read every line already, the
        // bound below holds if the file changed since.
        var lineStart = 0
        while let bytes = try reader.next() {
            // Lines end only at row ends in COPY's text format (a newline inside a value is `\n`).
            var start = pending.count
            pending += bytes
            while let newline = pending[start...].firstIndex(of: 0x0A) {
                guard newline - lineStart <= maxLineBytes else { throw lineTooLong(path) }
                pendingRows += 1
                start = newline + 1
                lineStart = start
                if pendingRows == batchRows {
                    try load(pending[..<start])
                    pending.removeFirst(start)
                    pendingRows = 0
                    start = 0
                    lineStart = 0
                }
            }
            guard pending.count - lineStart <= maxLineBytes else { throw lineTooLong(path) }
        }
        guard pending.last.map({ $0 == 0x0A }) ?? true else {
            throw LogRetentionError.corruptArchive(file: path, problem: "its last line is cut short")
        }
        if !pending.isEmpty { try load(pending[...]) }
        guard result.inArchive == entry.events else {
            throw LogRetentionError.corruptArchive(file: path, problem: "it holds \(result.inArchive) events, the manifest says \(entry.events)")
        }
        let record = try PrunedDays.markRestored(day: day, archiveSHA256: entry.sha256,
                                                 eventsInLog: result.restored + result.present, on: connection)
        // Back in the log, and the read models rebuilt without it: the output says to rebuild.
        result.rebuiltWithout = record.marked && record.before?.rebuiltWithoutAt != nil
        logger.info("log.day-restored", ["day": entry.day, "restored": String(result.restored), "present": String(result.present),
                                         "conflicting": String(result.conflicting)])
        return result
    }

    private func lineTooLong(_ path: String) -> LogRetentionError {
        .corruptArchive(file: path, problem: ArchiveLine.tooLong(maxLineBytes, outcome: "the events before it may be back in the log"))
    }

    /// One transaction: the rows into the staging table, then those the log does not hold yet
    /// into `event_ids` and the log: in their places when `keepingPlaces` and their transaction
    /// id lies behind this database's, else at the head of the log.
    private func loadChunk(_ rows: [UInt8], day: Timestamp, file: String, keepingPlaces: Bool,
                           on connection: Connection) throws -> (rows: Int, candidates: Int, stored: Int) {
        let dayEnd = day.adding(microseconds: Timestamp.microsecondsPerDay)
        return try connection.transaction { connection in
            // Made per transaction, as the event store's staging is: a session ending with a
            // temporary table can hang (EventStore's `createStaging`).
            try connection.execute(Self.createStaging)
            let copied = try connection.copyIn(Self.stagingCopy, data: rows)
            let outside = try connection.query("""
                SELECT count(*) FROM engage_restore_staging_v1
                WHERE recorded_at < \(PostgresTimestamp(day)) OR recorded_at >= \(PostgresTimestamp(dayEnd))
                """)[0].decode(0, as: Int.self)
            guard outside == 0 else {
                throw LogRetentionError.corruptArchive(file: file, problem: "\(outside) of its events were not recorded on its day")
            }
            let counts = try connection.query("""
                WITH candidates AS (
                    SELECT DISTINCT ON (s.event_id) s.* FROM engage_restore_staging_v1 s
                    WHERE NOT EXISTS (
                        SELECT 1 FROM events e
                        WHERE e.recorded_at >= \(PostgresTimestamp(day)) AND e.recorded_at < \(PostgresTimestamp(dayEnd))
                          AND e.event_id = s.event_id)
                    ORDER BY s.event_id, s.transaction_id, s.position
                ), new_ids AS (
                    INSERT INTO event_ids (event_id, app_id) SELECT event_id, app_id FROM candidates ORDER BY event_id
                    ON CONFLICT (event_id) DO NOTHING
                    RETURNING event_id
                ), ids_of_kept_events AS (
                    -- Events the log still holds whose ids are gone (a prune killed while it
                    -- deleted the week's ids, before it detached the week): their ids return, so
                    -- that a retry of one is a duplicate again.
                    INSERT INTO event_ids (event_id, app_id)
                    SELECT DISTINCT s.event_id, s.app_id FROM engage_restore_staging_v1 s
                    WHERE EXISTS (
                        SELECT 1 FROM events e
                        WHERE e.recorded_at >= \(PostgresTimestamp(day)) AND e.recorded_at < \(PostgresTimestamp(dayEnd))
                          AND e.event_id = s.event_id)
                    ORDER BY s.event_id
                    ON CONFLICT (event_id) DO NOTHING
                ), stored AS (
                    INSERT INTO events (position, transaction_id, event_id, app_id, notification_id, type, category, device_id,
                                        occurred_at, recorded_at, experiment_id, experiment_arm, payload)
                    SELECT CASE WHEN c.kept THEN c.position ELSE nextval('events_position_seq') END,
                           CASE WHEN c.kept THEN c.transaction_id ELSE pg_current_xact_id() END,
                           c.event_id, c.app_id, c.notification_id, c.type, c.category, c.device_id,
                           c.occurred_at, c.recorded_at, c.experiment_id, c.experiment_arm, c.payload
                    FROM (SELECT *, \(keepingPlaces) AND transaction_id < pg_current_xact_id() AS kept FROM candidates) c
                    JOIN new_ids USING (event_id)
                    ORDER BY c.transaction_id, c.position
                    RETURNING 1
                )
                SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM stored)
                """)[0]
            return (copied, try counts.decode(0, as: Int.self), try counts.decode(1, as: Int.self))
        }
    }

    static let createStaging: SQL = """
        CREATE TEMPORARY TABLE IF NOT EXISTS engage_restore_staging_v1 (
            position bigint, transaction_id xid8, event_id uuid, app_id text, notification_id text, type text,
            category text, device_id text, occurred_at timestamptz, recorded_at timestamptz, experiment_id text,
            experiment_arm text, payload jsonb
        ) ON COMMIT DROP
        """

    static let stagingCopy: SQL = """
        COPY engage_restore_staging_v1 (position, transaction_id, event_id, app_id, notification_id, type, category, device_id,
                                        occurred_at, recorded_at, experiment_id, experiment_arm, payload)
        FROM STDIN
        """
}
