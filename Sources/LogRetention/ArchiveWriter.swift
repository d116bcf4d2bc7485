import EngageCore
import Foundation
import Postgres

/// Writes one UTC day of the log into an archive directory: PostgreSQL's COPY text of the rows
/// `select` returns, gzip-compressed, synced and named after the day (see `ArchiveManifest`).
enum ArchiveWriter {
    struct Written {
        var entry: ArchiveManifest.Day
    }

    /// Nil, and no file, when the day has no events.
    static func write(_ select: SQL, day: Timestamp, directory: String, on connection: Connection) throws -> Written? {
        let dayText = ArchiveManifest.dayText(day)
        let file = ArchiveManifest.fileName(forDay: dayText)
        let writer = try GzipFileWriter(path: directory + "/" + file)
        // Timestamps as ISO 8601 with a UTC offset, whatever the server's defaults: the text reads
        // back the same in any session.
        try connection.execute("SET TIME ZONE 'UTC'")
        try connection.execute("SET DateStyle = 'ISO, YMD'")
        defer {
            _ = try? connection.execute("RESET TIME ZONE")
            _ = try? connection.execute("RESET DateStyle")
        }
        var copy: SQL = "COPY ("
        copy.append(select)
        copy.append(") TO STDOUT")
        let events = try connection.copyOut(copy) { chunk in try writer.write(chunk) }
        if events == 0 { return nil }
        let (bytes, sha256) = try writer.finish()
        return Written(entry: ArchiveManifest.Day(day: dayText, file: file, events: events, bytes: bytes, sha256: sha256,
                                                  archivedAt: Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000)).rfc3339))
    }
}
