import EngageCore
import Foundation
import Glibc

/// Adds a prune's rows to days the archive already holds, so that pruning into the same
/// directory again never loses an archived event.
///
/// What the log holds of a day the archive lists can be less than the day's file: the legacy
/// partition loses a pass's rows in batches after the pass archived them (a prune cut short
/// during those deletions leaves days partly gone from the log); a restore cut short brings a
/// week's partition back with part of its days; a restore leaves out an event whose id another
/// event holds. Replacing the day's file with what the log holds would lose the rest. For a day
/// the manifest lists, the prune's rows are therefore written apart (`NAME.pass`), the day's file
/// is checked against its entry, and the new file is the old one's bytes as they are (its gzip
/// members) followed by a member holding the pass's lines whose event_id the old file does not
/// hold. A day that gains nothing keeps its file and entry.
///
/// The merged file is written as `NAME.merged` and synced; the manifest, saved next, is what
/// commits it; then it is renamed over the old file. A crash in between leaves the manifest
/// naming the merged file's checksum: `finishPending` completes the rename (or removes a merged
/// file the manifest never took), before a prune or a restore reads the directory.
///
/// Memory: the ids of one day's old file at a time, 16 bytes each in a sorted array.
enum ArchiveMerge {
    static let passSuffix = ".pass"
    static let mergedSuffix = ".merged"

    /// Index of `event_id` among a line's tab-separated columns.
    static let eventIDColumn = ArchiveManifest.columnList.firstIndex(of: "event_id")!

    /// Completes what an interrupted merge left: a `NAME.merged` whose size and SHA-256 are the
    /// manifest's entry for NAME replaces NAME; any other is removed, as are pass files, unless
    /// not `removingLeftovers` (a restore, which reads neither, from a directory it may not write).
    static func finishPending(in directory: String, manifest: ArchiveManifest,
                              removingLeftovers: Bool = true) throws(LogRetentionError) {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            throw .io(path: directory, problem: "cannot list: \(error.localizedDescription)")
        }
        for name in names.sorted() {
            let path = directory + "/" + name
            if name.hasSuffix(passSuffix) {
                if removingLeftovers { try remove(path) }
            } else if name.hasSuffix(mergedSuffix) {
                let file = String(name.dropLast(mergedSuffix.count))
                let (sha256, bytes) = try sha256OfFile(path)
                if let entry = manifest.days.first(where: { $0.file == file }), entry.sha256 == sha256, entry.bytes == bytes {
                    guard rename(path, directory + "/" + file) == 0 else {
                        throw .io(path: path, problem: "rename failed: \(String(cString: strerror(errno)))")
                    }
                    try syncDirectory(of: path)
                } else if removingLeftovers {
                    try remove(path)
                }
            }
        }
    }

    /// Merges the days of `read` that `manifest` lists (written apart by `DayFiles`) into their
    /// files, records every day of `read` in the manifest and saves it, then moves the merged files
    /// into place. Returns `read` with each merged day's count and entry. Refuses, changing no
    /// listed file and not the manifest, if a listed day's file is missing or does not match its
    /// entry.
    static func commit(_ read: [PartitionReader.DayRead], into manifest: inout ArchiveManifest,
                       directory: String) throws(LogRetentionError) -> (days: [PartitionReader.DayRead], added: [String: Int]) {
        let listed = Dictionary(manifest.days.map { ($0.day, $0) }, uniquingKeysWith: { $1 })
        var passFiles: [String] = []
        // Merged files the manifest does not name yet; once it may (its save has begun), they are
        // left for `finishPending` to settle.
        var uncommitted: [String] = []
        defer {
            for path in passFiles + uncommitted { unlink(path) }
        }
        let apart = read.compactMap { day in day.entry.flatMap { listed[$0.day] } }
        passFiles = apart.map { directory + "/" + $0.file + passSuffix }
        // Every old file checked before any is merged: a refusal leaves the archive as it was.
        for old in apart { try verify(old, in: directory) }
        var days = read
        var added: [String: Int] = [:]
        for index in days.indices {
            guard let entry = days[index].entry, let old = listed[entry.day] else { continue }
            let merged = try merge(old, pass: directory + "/" + entry.file + passSuffix, in: directory)
            added[entry.day] = merged.added
            if merged.entry != nil { uncommitted.append(directory + "/" + entry.file + mergedSuffix) }
            days[index].entry = merged.entry ?? old
            days[index].events = (merged.entry ?? old).events
        }
        for day in days { manifest.record(day.entry!) }
        let mergedFiles = uncommitted
        uncommitted = []
        try manifest.save(to: directory)
        // The manifest names the merged files now: they replace the old ones.
        for path in mergedFiles {
            guard rename(path, String(path.dropLast(mergedSuffix.count))) == 0 else {
                throw .io(path: path, problem: "rename failed: \(String(cString: strerror(errno)))")
            }
        }
        if let last = mergedFiles.last { try syncDirectory(of: last) }
        return (days, added)
    }

    /// Refuses a day's file that is missing or whose size or SHA-256 is not its entry's.
    static func verify(_ entry: ArchiveManifest.Day, in directory: String) throws(LogRetentionError) {
        let path = directory + "/" + entry.file
        guard FileManager.default.fileExists(atPath: path) else {
            throw .corruptArchive(file: path, problem: "missing although the manifest lists it; nothing was pruned")
        }
        let (sha256, bytes) = try sha256OfFile(path)
        guard sha256 == entry.sha256, bytes == entry.bytes else {
            throw .corruptArchive(
                file: path, problem: "its SHA-256 or size does not match the manifest (changed or damaged since it was written); nothing was pruned")
        }
    }

    /// The old file's members followed by the pass's new lines, as `NAME.merged`, synced; nil
    /// entry if the pass adds nothing.
    private static func merge(_ old: ArchiveManifest.Day, pass: String,
                              in directory: String) throws(LogRetentionError) -> (entry: ArchiveManifest.Day?, added: Int) {
        let path = directory + "/" + old.file
        var ids: [EventID] = []
        // The manifest's count is only a hint until the lines agree with it (below): an edited one
        // must not size an allocation.
        ids.reserveCapacity(min(old.events, 1 << 20))
        try forEachLine(of: path, outcome: "nothing was pruned") { line throws(LogRetentionError) in
            guard let id = eventID(in: line) else { throw .corruptArchive(file: path, problem: "a line has no event_id") }
            ids.append(id)
        }
        guard ids.count == old.events else {
            throw .corruptArchive(file: path, problem: "it holds \(ids.count) events, the manifest says \(old.events); nothing was pruned")
        }
        ids.sort()
        var writer: GzipFileWriter?
        var pending: [UInt8] = []
        var added = 0
        try forEachLine(of: pass, outcome: "nothing was pruned") { line throws(LogRetentionError) in
            guard let id = eventID(in: line) else { throw .io(path: pass, problem: "a COPY line has no event_id") }
            if contains(ids, id) { return }
            if writer == nil {
                let opened = try GzipFileWriter(path: path + mergedSuffix)
                try opened.copyMembers(of: path)
                writer = opened
            }
            pending += line
            added += 1
            if pending.count >= 256 * 1024 {
                try writer!.write(pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
        guard let writer else { return (nil, 0) }
        if !pending.isEmpty { try writer.write(pending) }
        let (bytes, sha256) = try writer.finish()
        let archivedAt = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000)).rfc3339
        return (ArchiveManifest.Day(day: old.day, file: old.file, events: old.events + added, bytes: bytes, sha256: sha256,
                                    archivedAt: archivedAt), added)
    }

    /// Each line of a gzip file of COPY text, newline included. A line longer than `maxLineBytes`
    /// makes the file corrupt (`outcome` says what was left undone), read no further than that.
    static func forEachLine(of path: String, maxLineBytes: Int = ArchiveLine.maxBytes, outcome: String,
                            _ body: (ArraySlice<UInt8>) throws(LogRetentionError) -> Void) throws(LogRetentionError) {
        let reader = try GzipFileReader(path: path)
        var pending: [UInt8] = []
        while let bytes = try reader.next() {
            // Lines end only at row ends in COPY's text format (a newline inside a value is `\n`).
            // Only the new bytes are searched: a long line is scanned once, not once a chunk.
            var scan = pending.count
            pending += bytes
            var start = 0
            while let newline = pending[scan...].firstIndex(of: 0x0A) {
                guard newline - start <= maxLineBytes else {
                    throw .corruptArchive(file: path, problem: ArchiveLine.tooLong(maxLineBytes, outcome: outcome))
                }
                try body(pending[start...newline])
                start = newline + 1
                scan = start
            }
            pending.removeFirst(start)
            guard pending.count <= maxLineBytes else {
                throw .corruptArchive(file: path, problem: ArchiveLine.tooLong(maxLineBytes, outcome: outcome))
            }
        }
        guard pending.isEmpty else { throw .corruptArchive(file: path, problem: "its last line is cut short; \(outcome)") }
    }

    /// The event_id of a COPY text line (PostgreSQL writes a uuid in its canonical form), or nil
    /// if the line has none.
    static func eventID(in line: ArraySlice<UInt8>) -> EventID? {
        var index = line.startIndex
        var tabs = 0
        while index < line.endIndex && tabs < eventIDColumn {
            if line[index] == 0x09 { tabs += 1 }
            index += 1
        }
        guard tabs == eventIDColumn else { return nil }
        let column = Array(line[index...].prefix { $0 != 0x09 })
        return EventID.parse(column, column.indices)
    }

    /// Whether the sorted `ids` hold `id`.
    static func contains(_ ids: [EventID], _ id: EventID) -> Bool {
        var low = 0, high = ids.count
        while low < high {
            let middle = (low + high) / 2
            if ids[middle] < id { low = middle + 1 } else { high = middle }
        }
        return low < ids.count && ids[low] == id
    }

    private static func remove(_ path: String) throws(LogRetentionError) {
        guard unlink(path) == 0 || errno == ENOENT else {
            throw .io(path: path, problem: "cannot remove: \(String(cString: strerror(errno)))")
        }
    }
}
