import EngageCore
import EventStore
import Foundation
import LogRetention
import Postgres
import Testing
import TestSupport

/// Restores after a prune or a restore that was cut short, and archives whose manifest is wrong
/// (each failed before its fix, as described).
@Suite("Log restore after what was cut short")
struct RestoreAfterCutShortTests {
    /// A prune killed after it detached a week and before it dropped it leaves the week's table
    /// (its events archived, its ids gone): the restore finishes that first. It failed with "no
    /// partition of relation events found for row", every day of the week, until the next prune.
    @Test func aWeekLeftDetachedByAKilledPruneDoesNotStopTheRestore() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 10, tag: "d45"), daysAgo: 45)
        let before = try await fixtures.log()
        let week = try #require(try await fixtures.pool.withConnection { try EventPartitions.list(on: $0) }.first?.name)
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        // The table as the killed prune left it: detached from the log, not dropped.
        try await fixtures.pool.withConnection { connection in
            try connection.execute("CREATE TABLE \(identifier: week) (LIKE events INCLUDING ALL)")
        }

        let report = try await fixtures.restorer(directory).run()

        #expect(report.restored == before.count)
        #expect(try await fixtures.log() == before)
    }

    /// Ten notifications' events recorded 45 days ago, pruned into a new archive: the log as it
    /// was, and the archive's directory (the caller removes it).
    static func weekPrunedIntoAnArchive(tag: String) async throws -> (RetentionFixtures, [String], String) {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 10, tag: tag), daysAgo: 45)
        let before = try await fixtures.log()
        let directory = try RetentionFixtures.temporaryDirectory()
        _ = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        return (fixtures, before, directory)
    }

    /// A prune killed while it deleted the week's ids (committed in batches, before it detaches
    /// the week) leaves events in the log without their ids: the restore inserted nothing for
    /// events the log holds, so their ids never came back and a retry of one would be stored twice.
    @Test func aRestoreBringsBackTheIdsOfEventsTheLogStillHolds() async throws {
        let (fixtures, before, directory) = try await Self.weekPrunedIntoAnArchive(tag: "ids")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try await fixtures.restorer(directory).run().restored == before.count)
        // As the killed prune left it: the events in the log, half their ids gone.
        let removed = try await fixtures.count("""
            WITH gone AS (DELETE FROM event_ids WHERE event_id IN (SELECT event_id FROM events ORDER BY event_id LIMIT \(before.count / 2))
                          RETURNING 1)
            SELECT count(*) FROM gone
            """)
        #expect(removed == before.count / 2)

        _ = try await fixtures.restorer(directory).run()

        #expect(try await fixtures.log() == before)
        #expect(try await fixtures.count("SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM event_ids i WHERE i.event_id = e.event_id)") == 0)
    }

    /// What a killed prune leaves beside its archive (a day's pass file, a merge the manifest does
    /// not name) is never read by a restore, which leaves it for the next prune: the restore
    /// removed it first, and from an archive mounted read-only failed to ("cannot remove").
    @Test func aRestoreLeavesAPrunesLeftoversAlone() async throws {
        let (fixtures, before, directory) = try await Self.weekPrunedIntoAnArchive(tag: "left")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let leftovers = [directory + "/events-2000-01-01.tsv.gz.pass", directory + "/events-2000-01-01.tsv.gz.merged"]
        for path in leftovers { #expect(FileManager.default.createFile(atPath: path, contents: Data("partial".utf8))) }

        #expect(try await fixtures.restorer(directory).run().restored == before.count)

        #expect(leftovers.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        #expect(try await fixtures.log() == before)
    }

    /// A day still missing keeps its first record when it is pruned again: a prune cut short
    /// (half the day deleted) and run again into another archive finds only the other half, and
    /// a restore of that archive alone marked the whole day restored, so that a rebuild went on
    /// without the half that is in the first archive only.
    @Test func aDayPrunedAgainBeforeItsRestoreKeepsItsFirstRecord() async throws {
        let fixtures = try RetentionFixtures()
        let day = Timestamp(rfc3339: "2026-10-05T00:00:00Z")!
        try await fixtures.pool.withConnection { connection in
            try PrunedDays.record(day: day, events: 100, archiveFile: "first/events-2026-10-05.tsv.gz", archiveSHA256: "aa",
                                  on: connection)
            try PrunedDays.record(day: day, events: 30, archiveFile: "second/events-2026-10-05.tsv.gz", archiveSHA256: "bb",
                                  on: connection)
        }
        let recorded = try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }
        #expect(recorded.map(\.events) == [100])
        #expect(recorded.map(\.archiveSHA256) == ["aa"])

        let second = try await fixtures.pool.withConnection {
            try PrunedDays.markRestored(day: day, archiveSHA256: "bb", eventsInLog: 30, on: $0)
        }
        #expect(!second.marked)
        let first = try await fixtures.pool.withConnection {
            try PrunedDays.markRestored(day: day, archiveSHA256: "aa", eventsInLog: 100, on: $0)
        }
        #expect(first.marked)

        // Restored, the day is recorded anew when pruned again.
        try await fixtures.pool.withConnection { connection in
            try PrunedDays.record(day: day, events: 100, archiveFile: "third/events-2026-10-05.tsv.gz", archiveSHA256: "cc",
                                  on: connection)
        }
        let again = try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }
        #expect(again.map(\.archiveSHA256) == ["cc"] && again.first?.restoredAt == nil)
    }

    /// A manifest whose count for a day is not the number of events its file holds (edited: the
    /// counts are the manifest's word, which no checksum covers) refuses the whole archive before
    /// any day is loaded. It was found only after the day was loaded: every rerun stopped there.
    @Test func aManifestCountThatIsNotTheFilesIsRefusedBeforeAnythingIsLoaded() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 5, tag: "d45"), daysAgo: 45)
        try await fixtures.seed(RetentionFixtures.events(notifications: 5, tag: "d38"), daysAgo: 38)
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        let manifestURL = URL(fileURLWithPath: directory + "/manifest.json")
        var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        var days = try #require(manifest["days"] as? [[String: Any]])
        try #require(days.count == 2)
        days[1]["events"] = (days[1]["events"] as? Int ?? 0) + 1
        manifest["days"] = days
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestURL)

        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.restorer(directory).run() }
        #expect(error?.description.contains("the manifest says") == true, "\(String(describing: error))")
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)
    }
}
