import Digest
import EngageCore
import EventStore
import Foundation
@testable import LogRetention
import Postgres
import Testing
import TestSupport

/// The legacy partition loses a pass's rows in batches after the pass archived them. A prune cut
/// short during those deletions is run again into the same archive: the days it archives again
/// must keep every event their files hold (`ArchiveMerge`), not be replaced by what is left.
///
/// The interruption is set up as it leaves things, without a crash: a prune archives the two old
/// days and removes them, a restore puts them back (the log as the pass's archive step left it,
/// rows and ids in their places), then SQL removes the oldest rows with their ids as the deletion
/// batches would have before the interruption.
@Suite("Legacy prune run again into its archive")
struct LegacyRerunTests {
    @Test func aRerunAfterAnInterruptedLegacyPruneKeepsEveryArchivedEvent() async throws {
        let (fixtures, directory) = try await Self.archivedAndRestored()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let before = try await fixtures.log()
        let files = try Self.files(directory)
        // The batches took day -40 whole and 30 rows of day -39, then the prune stopped.
        try await Self.deleteOldest(130, fixtures)
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 70)

        let report = try await fixtures.pruner(olderThan: 31, archive: directory).run()

        // Only day -39 was left to read: its file keeps its 100 events rather than the 70 left.
        #expect(report.days.map(\.events) == [100])
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)
        #expect(try await fixtures.count("SELECT count(*) FROM event_ids") == 0)
        let manifest = try ArchiveManifest.load(from: directory, creating: false)
        #expect(manifest.days.map(\.events) == [100, 100])
        for entry in manifest.days {
            let ids = try Self.lines(of: directory + "/" + entry.file).map(Self.eventID)
            #expect(ids.count == 100)
            #expect(Set(ids) == Set(files[entry.file]!.map(Self.eventID)))
        }
        #expect(try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }.map(\.events) == [100, 100])

        // Into the now empty log: exactly the rows there were, once; again, nothing more.
        let restored = try await fixtures.restorer(directory).run()
        #expect(restored.restored == 200)
        #expect(restored.present == 0)
        #expect(try await fixtures.log() == before)
        let again = try await fixtures.restorer(directory).run()
        #expect(again.restored == 0)
        #expect(again.present == 200)
        #expect(try await fixtures.log() == before)
    }

    @Test func aDamagedFileOfADayArchivedAgainStopsTheRerunBeforeAnythingGoes() async throws {
        let (fixtures, directory) = try await Self.archivedAndRestored()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.deleteOldest(130, fixtures)
        let manifestBefore = try Data(contentsOf: URL(fileURLWithPath: directory + "/manifest.json"))
        let damaged = try #require(try ArchiveManifest.load(from: directory, creating: false).days.last).file
        var bytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + damaged))
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: directory + "/" + damaged))
        let log = try await fixtures.log()
        let recorded = try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }

        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.pruner(olderThan: 31, archive: directory).run() }

        guard case .corruptArchive(let file, let problem) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(file == directory + "/" + damaged)
        #expect(problem.contains("does not match the manifest"))
        #expect(error?.code == "retention.corrupt_archive")
        // Nothing of the pass went, nothing was recorded, and the archive is as it was.
        #expect(try await fixtures.log() == log)
        #expect(try await fixtures.count("SELECT count(*) FROM event_ids") == 70)
        #expect(try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }.map(\.restoredAt) == recorded.map(\.restoredAt))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/manifest.json")) == manifestBefore)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + damaged)) == bytes)
        // The manifest and the two days' files, beside the prunes' lock file (`ArchiveLock`).
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0 != ".engage-archive.lock" }.count == 3)
    }

    @Test func aRerunWithNothingDeletedLeavesTheDaysAsTheyWere() async throws {
        let (fixtures, directory) = try await Self.archivedAndRestored()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let before = try await fixtures.log()
        let manifestBefore = try ArchiveManifest.load(from: directory, creating: false)
        let bytesBefore = try Self.bytes(directory)

        let report = try await fixtures.pruner(olderThan: 31, archive: directory).run()

        #expect(report.days.map(\.events) == [100, 100])
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)
        #expect(try ArchiveManifest.load(from: directory, creating: false) == manifestBefore)
        #expect(try Self.bytes(directory) == bytesBefore)
        let restored = try await fixtures.restorer(directory).run()
        #expect(restored.restored == 200)
        #expect(try await fixtures.log() == before)
    }

    /// A day's rows that its file lacks (here one recorded on it after it was archived, as a
    /// restore of another archive would bring) are added to the file after its own lines, each
    /// event once.
    @Test func rowsADaysFileLacksAreAddedAfterItsLines() async throws {
        let (fixtures, directory) = try await Self.archivedAndRestored()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let day39 = try #require(try ArchiveManifest.load(from: directory, creating: false).days.last)
        let oldLines = try Self.lines(of: directory + "/" + day39.file)
        let oldBytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + day39.file))
        _ = try await fixtures.pool.withConnection { connection in
            try connection.execute("""
                WITH id AS (INSERT INTO event_ids (event_id) VALUES (gen_random_uuid()) RETURNING event_id)
                INSERT INTO events (position, transaction_id, event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                    recorded_at, payload)
                SELECT nextval('events_position_seq'), pg_current_xact_id(), event_id, 'app-1', 'late', 'expanded', 'new_photo', 'device-1',
                       now(), \(PostgresTimestamp(ArchiveManifest.timestamp(ofDay: day39.day)!)) + interval '5 hours', '{}'
                FROM id
                """)
        }
        let before = try await fixtures.log()
        try await Self.deleteOldest(130, fixtures)

        let report = try await fixtures.pruner(olderThan: 31, archive: directory).run()

        #expect(report.days.map(\.events) == [101])
        let merged = try #require(try ArchiveManifest.load(from: directory, creating: false).days.last)
        #expect(merged.events == 101)
        let mergedBytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + merged.file))
        #expect(merged.bytes == mergedBytes.count)
        #expect(merged.sha256 == Hex.encode(SHA256.hash(Array(mergedBytes))))
        // The old file as it was, then a gzip member with the one line it lacked.
        #expect(mergedBytes.prefix(oldBytes.count) == oldBytes)
        let lines = try Self.lines(of: directory + "/" + merged.file)
        #expect(Array(lines.prefix(100)) == oldLines)
        #expect(lines.count == 101)
        #expect(lines.last?.split(separator: "\t")[4] == "late")
        #expect(try String(decoding: RetentionFixtures.shell("zcat '\(directory)/\(merged.file)' | wc -l"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "101")
        #expect(try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }.map(\.events) == [100, 101])

        // A crash after the manifest named the merged file but before it replaced the old one:
        // the restore moves it into place first.
        try FileManager.default.moveItem(atPath: directory + "/" + merged.file, toPath: directory + "/" + merged.file + ".merged")
        try oldBytes.write(to: URL(fileURLWithPath: directory + "/" + merged.file))
        let restored = try await fixtures.restorer(directory).run()
        #expect(restored.restored == 201)
        #expect(try await fixtures.log() == before)
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + merged.file)) == mergedBytes)
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + merged.file + ".merged"))
    }

    // MARK: Set-up

    /// A legacy log whose two old days were pruned into a new archive and restored, without its
    /// day of two days ago: every event it holds is in the archive.
    static func archivedAndRestored() async throws -> (RetentionFixtures, String) {
        let fixtures = try RetentionFixtures(RetentionFixtures.legacyDatabase())
        _ = try await fixtures.pool.withConnection { connection in
            try connection.execute("""
                WITH gone AS (DELETE FROM events WHERE recorded_at > now() - interval '31 days' RETURNING event_id)
                DELETE FROM event_ids WHERE event_id IN (SELECT event_id FROM gone)
                """)
        }
        let before = try await fixtures.log()
        let directory = try RetentionFixtures.temporaryDirectory()
        let report = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        try #require(report.days.map(\.events) == [100, 100])
        try #require(try await fixtures.count("SELECT count(*) FROM events") == 0)
        _ = try await fixtures.restorer(directory).run()
        try #require(try await fixtures.log() == before)
        return (fixtures, directory)
    }

    /// Removes the `count` oldest rows of the legacy partition with their ids, one statement as a
    /// deletion batch does.
    static func deleteOldest(_ count: Int, _ fixtures: RetentionFixtures) async throws {
        let deleted = try await fixtures.pool.withConnection { connection in
            try connection.execute("""
                WITH gone AS (
                    DELETE FROM events_legacy WHERE ctid IN (SELECT ctid FROM events_legacy ORDER BY recorded_at, ctid LIMIT \(count))
                    RETURNING event_id
                )
                DELETE FROM event_ids WHERE event_id = ANY(ARRAY(SELECT event_id FROM gone))
                """)
        }
        try #require(deleted == count)
    }

    static func lines(of path: String) throws -> [String] {
        var lines: [String] = []
        try ArchiveMerge.forEachLine(of: path, outcome: "") { lines.append(String(decoding: $0, as: UTF8.self)) }
        return lines
    }

    static func eventID(_ line: String) -> Substring { line.split(separator: "\t")[2] }

    /// Every day file's lines by name.
    static func files(_ directory: String) throws -> [String: [String]] {
        let manifest = try ArchiveManifest.load(from: directory, creating: false)
        return Dictionary(uniqueKeysWithValues: try manifest.days.map { ($0.file, try lines(of: directory + "/" + $0.file)) })
    }

    /// Every file of the directory, by name.
    static func bytes(_ directory: String) throws -> [String: Data] {
        Dictionary(uniqueKeysWithValues: try FileManager.default.contentsOfDirectory(atPath: directory).map {
            ($0, try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)))
        })
    }
}
