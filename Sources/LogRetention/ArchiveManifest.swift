import EngageCore
import Foundation
import Glibc
import Postgres

/// `manifest.json` of an archive directory: which file holds which UTC day of the log, how many
/// events, and each file's size and SHA-256. docs/retention.md describes the format.
///
/// Each file is a gzip stream of PostgreSQL's COPY text format (columns as `columns` lists them,
/// timestamps in ISO 8601 with a UTC offset), one event per line in the order the rows lay in
/// their partition (`PartitionReader`). A prune adds its days to the manifest already in the
/// directory; a day of a week archived again replaces its entry, one of the legacy partition
/// keeps its events and gains those it lacks (`ArchiveMerge`).
struct ArchiveManifest: Codable, Equatable {
    static let fileName = "manifest.json"
    static let formatName = "engage-log-archive"
    static let currentVersion = 1
    /// The columns of each line, in order: every column of the log.
    static let columnList = [
        "position", "transaction_id", "event_id", "app_id", "notification_id", "type", "category", "device_id",
        "occurred_at", "recorded_at", "experiment_id", "experiment_arm", "payload",
    ]

    /// `columnList` as SQL.
    static let columnsSQL: SQL = """
        position, transaction_id, event_id, app_id, notification_id, type, category, device_id,
        occurred_at, recorded_at, experiment_id, experiment_arm, payload
        """

    struct Day: Codable, Equatable {
        /// `2026-10-30`: the UTC day whose recorded events the file holds.
        var day: String
        var file: String
        var events: Int
        var bytes: Int
        var sha256: String
        var archivedAt: String

        enum CodingKeys: String, CodingKey {
            case day, file, events, bytes, sha256
            case archivedAt = "archived_at"
        }
    }

    var format = formatName
    var version = currentVersion
    var columns = columnList
    var days: [Day] = []

    static func fileName(forDay day: String) -> String { "events-\(day).tsv.gz" }

    /// The manifest of `directory`, or an empty one if the directory has none yet.
    static func load(from directory: String, creating: Bool) throws(LogRetentionError) -> ArchiveManifest {
        let path = directory + "/" + fileName
        guard FileManager.default.fileExists(atPath: path) else {
            if creating { return ArchiveManifest() }
            throw .corruptArchive(file: path, problem: "no manifest: not an archive written by engage log prune")
        }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .io(path: path, problem: "cannot read: \(error.localizedDescription)")
        }
        let manifest: ArchiveManifest
        do { manifest = try JSONDecoder().decode(ArchiveManifest.self, from: data) } catch {
            throw .corruptArchive(file: path, problem: "not a valid manifest")
        }
        guard manifest.format == formatName else {
            throw .corruptArchive(file: path, problem: "format '\(manifest.format)' is not \(formatName)")
        }
        guard manifest.version == currentVersion else {
            throw .corruptArchive(file: path, problem: "version \(manifest.version) is not one this engage reads (\(currentVersion))")
        }
        guard manifest.columns == columnList else {
            throw .corruptArchive(file: path, problem: "its columns are not the log's")
        }
        for entry in manifest.days where entry.file != fileName(forDay: entry.day) || ArchiveManifest.timestamp(ofDay: entry.day) == nil {
            throw .corruptArchive(file: path, problem: "entry '\(entry.file)' does not name a day's file")
        }
        for entry in manifest.days where entry.events < 0 || entry.bytes < 0 {
            throw .corruptArchive(file: path, problem: "entry '\(entry.file)' has a negative count or size")
        }
        return manifest
    }

    /// Writes the manifest beside a temporary copy, syncs it and renames it into place.
    func save(to directory: String) throws(LogRetentionError) {
        let path = directory + "/" + Self.fileName
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try encoder.encode(self) + Data("\n".utf8)
            let temporary = URL(fileURLWithPath: path + ".tmp")
            try data.write(to: temporary)
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
        } catch {
            throw .io(path: path, problem: "cannot write: \(error.localizedDescription)")
        }
        guard rename(path + ".tmp", path) == 0 else {
            throw .io(path: path, problem: "rename failed: \(String(cString: strerror(errno)))")
        }
        try syncDirectory(of: path)
    }

    /// Adds or replaces the entry of `entry.day`, keeping days in order.
    mutating func record(_ entry: Day) {
        days.removeAll { $0.day == entry.day }
        days.append(entry)
        days.sort { $0.day < $1.day }
    }

    /// `2026-10-30` for the UTC day starting at `timestamp`.
    static func dayText(_ timestamp: Timestamp) -> String {
        String(timestamp.rfc3339.prefix(10))
    }

    /// Midnight UTC starting `day` (`2026-10-30`), or nil if it is not a date.
    static func timestamp(ofDay day: String) -> Timestamp? {
        guard day.utf8.count == 10, let midnight = Timestamp(rfc3339: day + "T00:00:00Z"), dayText(midnight) == day else { return nil }
        return midnight
    }
}
