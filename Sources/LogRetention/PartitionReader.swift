import EngageCore
import Foundation
import Postgres
import Runtime

/// Reads the rows of one partition recorded before a bound in the order they lie, which is the
/// order they were recorded: a batch of blocks at a time (a TID range scan, no sort), resting
/// between batches as the duty cycle asks. With an archive directory each UTC day's rows go into
/// that day's gzip file; without, they are only counted by day.
///
/// Walking the blocks in order makes the archive deterministic (the same partition gives the same
/// files) without sorting it: a day's file holds its rows in the order they lie, which
/// `LogRestorer` does not depend on (it places each event by its own position and transaction id).
struct PartitionReader {
    var partition: String
    /// Rows recorded at or after it are not read (a week's end, or the cut in the legacy partition).
    var recordedBefore: Timestamp
    /// Blocks 0 up to this one are read.
    var blocks: Int64
    var blocksPerBatch: Int64
    var pace: DutyCycle

    /// One UTC day's rows read: how many, and its archive file's entry if there is an archive.
    struct DayRead {
        var day: Timestamp
        var events: Int
        var entry: ArchiveManifest.Day?
    }

    /// Every day's rows into its file in `directory`, each file synced before this returns; the
    /// days in order, none without events. The days in `apart` go to `NAME.pass` instead, for
    /// `ArchiveMerge` to add to the day's file.
    func archive(into directory: String, apart: Set<String> = [], on connection: Connection) throws -> [DayRead] {
        // Timestamps as ISO 8601 with a UTC offset, whatever the server's defaults: the text reads
        // back the same in any session, and a line's day is the first ten bytes of its recorded_at.
        try connection.execute("SET TIME ZONE 'UTC'")
        try connection.execute("SET DateStyle = 'ISO, YMD'")
        defer {
            _ = try? connection.execute("RESET TIME ZONE")
            _ = try? connection.execute("RESET DateStyle")
        }
        var files = DayFiles(directory: directory, apart: apart)
        let copy: SQL = """
            COPY (SELECT \(fragment: ArchiveManifest.columnsSQL) FROM \(identifier: partition)
                  WHERE \(fragment: Self.batchCondition)) TO STDOUT
            """
        try walk(on: connection) { connection throws in
            var routed = 0
            let copied = try connection.copyOut(copy) { chunk in routed += try files.write(lines: chunk) }
            guard routed == copied else {
                throw LogRetentionError.io(path: directory, problem: "COPY sent \(copied) rows of \(partition) but \(routed) lines")
            }
        }
        return try files.finish().map { DayRead(day: $0.day, events: $0.entry.events, entry: $0.entry) }
    }

    /// How many rows each UTC day holds, in order, none without events.
    func countByDay(on connection: Connection) throws -> [DayRead] {
        var counts: [Timestamp: Int] = [:]
        try walk(on: connection) { connection throws in
            for row in try connection.query("""
                SELECT date_trunc('day', recorded_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', count(*) FROM \(identifier: partition)
                WHERE \(fragment: Self.batchCondition) GROUP BY 1
                """).rows {
                let day = Timestamp(microsecondsSinceEpoch: try row.decode(0, as: PostgresTimestamp.self).unixMicroseconds)
                let events = try row.decode(1, as: Int.self)
                counts[day, default: 0] += events
            }
        }
        return counts.sorted { $0.key < $1.key }.map { DayRead(day: $0.key, events: $0.value, entry: nil) }
    }

    /// The batch's blocks and the bound, from settings: COPY takes no parameters.
    private static let batchCondition: SQL = """
        ctid >= format('(%s,0)', current_setting('engage.prune_first_block'))::tid
        AND ctid < format('(%s,0)', current_setting('engage.prune_end_block'))::tid
        AND recorded_at < current_setting('engage.prune_before')::timestamptz
        """

    private func walk(on connection: Connection, batch: (Connection) throws -> Void) throws {
        try connection.execute("SELECT set_config('engage.prune_before', \(recordedBefore.rfc3339), false)")
        var block: Int64 = 0
        while block < blocks {
            let stopwatch = Stopwatch()
            try connection.execute("""
                SELECT set_config('engage.prune_first_block', \(String(block)), false),
                       set_config('engage.prune_end_block', \(String(block + blocksPerBatch)), false)
                """)
            try batch(connection)
            block += blocksPerBatch
            pace.rest(afterWorking: stopwatch.elapsed)
        }
    }
}

/// The open gzip file of each day met so far, fed lines of COPY text.
struct DayFiles {
    let directory: String
    /// Days written to `NAME.pass` rather than their file (`ArchiveMerge`).
    let apart: Set<String>
    private var writers: [String: (writer: GzipFileWriter, events: Int)] = [:]

    init(directory: String, apart: Set<String> = []) {
        self.directory = directory
        self.apart = apart
    }

    /// Index of `recorded_at` among a line's tab-separated columns.
    static let recordedAtColumn = ArchiveManifest.columnList.firstIndex(of: "recorded_at")!

    /// Writes whole lines (COPY sends whole rows), each to its day's file; returns how many.
    mutating func write(lines chunk: [UInt8]) throws(LogRetentionError) -> Int {
        var lines = 0
        // Consecutive lines of one day go to its file in one write.
        var run: (day: String, start: Int)?
        var index = 0
        while index < chunk.count {
            let lineStart = index
            // Tabs only separate columns in COPY's text format (a tab in a value is `\t`).
            var tabs = 0
            while index < chunk.count && tabs < Self.recordedAtColumn {
                if chunk[index] == 0x09 { tabs += 1 }
                index += 1
            }
            guard tabs == Self.recordedAtColumn, index + 10 <= chunk.count else {
                throw .io(path: directory, problem: "a COPY line has no recorded_at column")
            }
            let day = String(decoding: chunk[index..<index + 10], as: UTF8.self)
            while index < chunk.count && chunk[index] != 0x0A { index += 1 }
            index += 1
            if run?.day != day {
                if let run { try writers[run.day]!.writer.write(chunk[run.start..<lineStart]) }
                try open(day)
                run = (day, lineStart)
            }
            writers[day]!.events += 1
            lines += 1
        }
        if let run { try writers[run.day]!.writer.write(chunk[run.start..<min(index, chunk.count)]) }
        return lines
    }

    private mutating func open(_ day: String) throws(LogRetentionError) {
        guard writers[day] == nil else { return }
        guard ArchiveManifest.timestamp(ofDay: day) != nil else {
            throw .io(path: directory, problem: "a COPY line's recorded_at does not begin with a day: \(day)")
        }
        let path = directory + "/" + ArchiveManifest.fileName(forDay: day) + (apart.contains(day) ? ArchiveMerge.passSuffix : "")
        writers[day] = (try GzipFileWriter(path: path), 0)
    }

    /// Ends, syncs and moves every file into place; their entries, oldest day first.
    consuming func finish() throws(LogRetentionError) -> [(day: Timestamp, entry: ArchiveManifest.Day)] {
        var finished: [(day: Timestamp, entry: ArchiveManifest.Day)] = []
        for (day, open) in writers.sorted(by: { $0.key < $1.key }) {
            let (bytes, sha256) = try open.writer.finish()
            let archivedAt = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000)).rfc3339
            finished.append((ArchiveManifest.timestamp(ofDay: day)!,
                             ArchiveManifest.Day(day: day, file: ArchiveManifest.fileName(forDay: day), events: open.events, bytes: bytes,
                                                 sha256: sha256, archivedAt: archivedAt)))
        }
        return finished
    }
}
