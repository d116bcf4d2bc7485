import Digest
import EngageCore
import EventStore
import Foundation
import LogRetention
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

@Suite("Log prune and restore")
struct LogPruneTests {
    @Test func aCutInsideTheIdempotencyWindowIsRefusedAndNothingChanges() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 3, tag: "old"), daysAgo: 20)
        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.pruner(olderThan: 30).run() }
        guard case .insideIdempotencyWindow(_, let minimum, let reason) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(minimum == "30 days 13 hours 10 minutes")
        #expect(reason.contains("ingestion accepts occurred_at up to 30 days in the past and 10 minutes ahead, after moving back the times of a device clock up to 12 hours ahead, so a retry of an event recorded up to 30 days 12 hours 10 minutes ago"))
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 6)
    }

    /// An engage serve with a longer --max-past-days takes retries of older events: a prune run
    /// with the default options keeps its window too, as long as the server recorded it lately.
    @Test func theWindowOfARunningServerWithLongerLimitsIsKept() async throws {
        let fixtures = try RetentionFixtures()
        // 47 days: a week that holds the day ends 7 days later at the latest, by the cut of a
        // prune of 40 days on any weekday (45 days ago, it straddled that cut on Thursdays and
        // Fridays, and nothing was pruned).
        try await fixtures.seed(RetentionFixtures.events(notifications: 3, tag: "old"), daysAgo: 47)
        var limits = EventLimits()
        limits.maxPast = .seconds(60 * 86_400)
        let wider = limits
        try await fixtures.pool.withConnection { try IngestWindows.record(wider, on: $0) }
        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.pruner(olderThan: 40).run() }
        guard case .insideIdempotencyWindow(_, let minimum, let reason) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(minimum == "60 days 13 hours 10 minutes")
        #expect(reason.contains("up to 60 days in the past"), "\(reason)")
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 6)
        // Not written for two days: that server stopped, its window no longer counts.
        _ = try await fixtures.pool.withConnection { try $0.execute("UPDATE ingest_windows SET seen_at = now() - interval '49 hours'") }
        let report = try await fixtures.pruner(olderThan: 40).run()
        #expect(report.events == 6)
    }

    @Test func wholeDaysGoWithTheirIdsIntoAnArchiveThatComesBackOnce() async throws {
        let fixtures = try RetentionFixtures()
        // Weeks of days 38 days ago or more lie wholly before the cut of a prune of 31 days.
        try await fixtures.seed(RetentionFixtures.events(notifications: 40, tag: "d45"), daysAgo: 45)
        try await fixtures.seed(RetentionFixtures.events(notifications: 25, tag: "d38"), daysAgo: 38)
        let kept = try await fixtures.seed(RetentionFixtures.events(notifications: 10, tag: "d5"), daysAgo: 5)
        try await fixtures.seed(RetentionFixtures.events(notifications: 5, tag: "now"), daysAgo: 0)
        let before = try await fixtures.log()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let report = try await fixtures.pruner(olderThan: 31, archive: directory).run()

        #expect(report.events == 130)
        #expect(report.days.map(\.events) == [80, 50])
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 30)
        #expect(try await fixtures.count("SELECT count(*) FROM event_ids") == 30)
        #expect(try await fixtures.count("SELECT count(*) FROM events e JOIN event_ids USING (event_id)") == 30)
        // The two weeks' partitions are gone, not emptied.
        let partitions = try await fixtures.pool.withConnection { try EventPartitions.list(on: $0) }
        #expect(partitions.allSatisfy { $0.upper > report.plan.cut })
        // A retry of a kept event is still a duplicate.
        #expect(try await fixtures.store.append([kept[0]]).outcomes == [.duplicate])

        // The archive: a manifest and one gzip file per day, each as its checksum says.
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/manifest.json"))) as! [String: Any]
        #expect(manifest["format"] as? String == "engage-log-archive")
        let days = try #require(manifest["days"] as? [[String: Any]])
        #expect(days.map { $0["events"] as? Int } == [80, 50])
        for day in days {
            let file = try #require(day["file"] as? String)
            let bytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file))
            #expect(Hex.encode(SHA256.hash(Array(bytes))) == day["sha256"] as? String)
            #expect(bytes.prefix(2) == Data([0x1F, 0x8B]))
        }
        let recorded = try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }
        #expect(recorded.map(\.events) == [80, 50])
        #expect(recorded.allSatisfy { $0.archiveSHA256 != nil && $0.restoredAt == nil })

        // Restored: every event back in its place, once; restoring again stores nothing.
        let restored = try await fixtures.restorer(directory).run()
        #expect(restored.restored == 130)
        #expect(restored.present == 0)
        #expect(try await fixtures.log() == before)
        #expect(try await fixtures.count("SELECT count(*) FROM event_ids") == 160)
        let again = try await fixtures.restorer(directory).run()
        #expect(again.restored == 0)
        #expect(again.present == 130)
        #expect(try await fixtures.log() == before)
        #expect(try await fixtures.pool.withConnection { try PrunedDays.missing(on: $0) }.isEmpty)
        // The restored ids are the idempotency key again.
        let firstPruned = try await fixtures.pool.withConnection { connection in
            try connection.query("SELECT event_id::text FROM events WHERE notification_id = 'd45-0' LIMIT 1")[0].decode(0, as: String.self)
        }
        var retry = RetentionFixtures.events(notifications: 1, tag: "d45")[0]
        retry.event.eventID = try #require(EventID(firstPruned))
        #expect(try await fixtures.store.append([retry]).outcomes == [.duplicate])
    }

    @Test func aRestoreIntoALogThatStillHoldsSomeOfTheEventsStoresOnlyTheMissingOnes() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 30, tag: "d45"), daysAgo: 45)
        try await fixtures.seed(RetentionFixtures.events(notifications: 20, tag: "d38"), daysAgo: 38)
        let before = try await fixtures.log()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        // Both come back; day -45's week goes again, and some events of day -38 by hand (with their ids).
        let other = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: other) }
        _ = try await fixtures.restorer(directory).run()
        _ = try await fixtures.pruner(olderThan: 38).run()
        _ = try await fixtures.pool.withConnection { connection in
            try connection.execute("""
                WITH gone AS (DELETE FROM events WHERE notification_id IN ('d38-0', 'd38-1', 'd38-2') RETURNING event_id)
                DELETE FROM event_ids WHERE event_id IN (SELECT event_id FROM gone)
                """)
        }
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 34)

        let report = try await fixtures.restorer(directory).run()

        #expect(report.days.map(\.restored) == [60, 6])
        #expect(report.days.map(\.present) == [0, 34])
        #expect(report.conflicting == 0)
        #expect(try await fixtures.log() == before)
    }

    @Test func aDamagedOrIncompleteArchiveIsRefusedBeforeAnythingIsLoaded() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 10, tag: "d45"), daysAgo: 45)
        try await fixtures.seed(RetentionFixtures.events(notifications: 10, tag: "d38"), daysAgo: 38)
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let report = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        let second = directory + "/" + (report.days[1].archiveFile ?? "")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: second))
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: second))

        let damaged = await #expect(throws: LogRetentionError.self) { try await fixtures.restorer(directory).run() }
        #expect(damaged?.code == "retention.corrupt_archive")
        #expect(damaged?.description.contains(report.days[1].archiveFile ?? "?") == true)
        #expect(damaged?.description.contains("does not match the manifest") == true)
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)

        try FileManager.default.removeItem(atPath: second)
        let missing = await #expect(throws: LogRetentionError.self) { try await fixtures.restorer(directory).run() }
        #expect(missing?.description.contains("missing") == true)
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)

        let notAnArchive = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: notAnArchive) }
        let empty = await #expect(throws: LogRetentionError.self) { try await fixtures.restorer(notAnArchive).run() }
        #expect(empty?.description.contains("no manifest") == true)
    }

    @Test func aPruneCutShortIsFinishedByTheNext() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 20, tag: "d45"), daysAgo: 45)
        try await fixtures.seed(RetentionFixtures.events(notifications: 20, tag: "d38"), daysAgo: 38)
        // As a crash would leave them: day -45's week detached (its ids already gone), day -38's with half its ids gone.
        let partitions = try await fixtures.pool.withConnection { try EventPartitions.list(on: $0) }
        try await fixtures.pool.withConnection { connection in
            try connection.execute("DELETE FROM event_ids WHERE event_id IN (SELECT event_id FROM \(identifier: partitions[0].name))")
            try connection.execute("ALTER TABLE events DETACH PARTITION \(identifier: partitions[0].name)")
            try connection.execute("""
                DELETE FROM event_ids WHERE event_id IN (SELECT event_id FROM \(identifier: partitions[1].name) WHERE notification_id < 'd38-5')
                """)
        }

        let report = try await fixtures.pruner(olderThan: 31).run()

        #expect(report.events == 40)
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)
        #expect(try await fixtures.count("SELECT count(*) FROM event_ids") == 0)
        #expect(try await fixtures.count("SELECT count(*) FROM pg_class WHERE relname = \(partitions[0].name)") == 0)
    }

    @Test func aCheckThatGivesAReasonStopsThePruneBeforeAnythingGoes() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 5, tag: "d45"), daysAgo: 45)
        let seen = Mutex<[Timestamp]>([])
        let check: LogPruner.Check = { _, cut in
            seen.withLock { $0.append(cut) }
            return ["the read model is not ready"]
        }
        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.pruner(olderThan: 31, checks: [check]).run() }
        #expect(error == .refused(reasons: ["the read model is not ready"]))
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 10)
        // The cut is the UTC midnight that starts the day 31 days ago.
        let cut = try #require(seen.withLock { $0.first })
        #expect(cut.microsecondsSinceEpoch % Timestamp.microsecondsPerDay == 0)
        #expect(try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }.isEmpty)
    }

    /// Also a day per pass over the legacy partition (`legacyDaysPerPass`), as a partition with
    /// years of days is pruned: the same days, archive and restore.
    @Test(arguments: [31, 1])
    func aLogFromBeforeTheUpgradeLosesItsOldRowsInBatchesIntoTheArchive(daysPerPass: Int) async throws {
        // Migration 9, events recorded 40, 39 and 2 days ago, then the upgrade.
        let fixtures = try RetentionFixtures(RetentionFixtures.legacyDatabase())
        let before = try await fixtures.log()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let plan = try await fixtures.pruner(olderThan: 31).plan()
        #expect(plan.partitions.map(\.partition.name) == ["events_legacy"])
        #expect(plan.partitions.map(\.whole) == [false])
        let report = try await fixtures.pruner(olderThan: 31, archive: directory, legacyDaysPerPass: daysPerPass).run()

        #expect(report.days.map(\.events) == [100, 100])
        #expect(Set(report.days.map(\.day)).count == 2)
        #expect(try await fixtures.count("SELECT count(*) FROM events_legacy") == 100)
        #expect(try await fixtures.count("SELECT count(*) FROM event_ids") == 100)
        let restored = try await fixtures.restorer(directory).run()
        #expect(restored.restored == 200)
        #expect(try await fixtures.log() == before)
        #expect(try await fixtures.count("SELECT count(*) FROM events_legacy") == 300)
    }

    /// An archive written by hand as docs/retention.md describes it, from a database whose
    /// transaction ids are ahead of this one's: restored at the head of the log, where tailing
    /// readers find it.
    @Test func aHandWrittenArchiveFromADatabaseAheadGoesToTheHeadOfTheLog() async throws {
        let fixtures = try RetentionFixtures()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let day = try await Self.writeArchive(transactionIDs: 900_000_000_001, into: directory, on: fixtures)

        let report = try await fixtures.restorer(directory).run()

        #expect(report.restored == 3)
        // The log is read gaplessly: up to the oldest transaction still running on the server,
        // which another test's may be.
        try await TestPostgres.waitForEarlierTransactions(fixtures.pool)
        let read = try await fixtures.store.read(after: .start, limit: 10)
        #expect(read.map(\.notificationID) == ["far-1", "far-2", "far-3"])
        #expect(read.allSatisfy { $0.position.transactionID < 900_000_000_000 })
        #expect(read.map(\.recordedAt.rfc3339) == Array(repeating: "\(day)T12:00:00.500000Z", count: 3))
    }

    /// Another database's archive of a day never pruned here, whose transaction ids lie behind
    /// this one's: in their own places its events would lie behind a reader's checkpoint and never
    /// be folded. They go to the head of the log too.
    @Test func anArchiveOfADayNeverPrunedHereGoesToTheHeadOfTheLogEvenWithOlderIDs() async throws {
        let fixtures = try RetentionFixtures()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await fixtures.seed(RetentionFixtures.events(notifications: 2, tag: "here"), daysAgo: 1)
        try await TestPostgres.waitForEarlierTransactions(fixtures.pool)
        let checkpoint = try #require(try await fixtures.store.read(after: .start, limit: 10).last).position
        _ = try await Self.writeArchive(transactionIDs: 3, into: directory, on: fixtures)

        let report = try await fixtures.restorer(directory).run()

        #expect(report.restored == 3)
        try await TestPostgres.waitForEarlierTransactions(fixtures.pool)
        let read = try await fixtures.store.read(after: checkpoint, limit: 10)
        #expect(read.map(\.notificationID) == ["far-1", "far-2", "far-3"])
    }

    /// Writes an archive of three events of one day 40 days ago, with transaction ids from
    /// `transactionIDs` on, as docs/retention.md describes the format; returns the day.
    private static func writeArchive(transactionIDs: UInt64, into directory: String, on fixtures: RetentionFixtures) async throws -> String {
        let day = try await fixtures.pool.withConnection { connection in
            try connection.query("SELECT to_char((now() AT TIME ZONE 'UTC')::date - 40, 'YYYY-MM-DD')")[0].decode(0, as: String.self)
        }
        let lines = (1...3).map { n in
            ["\(n)", "\(transactionIDs + UInt64(n) - 1)", "00000000-0000-4000-8000-00000000000\(n)", "app-1", "far-\(n)", "expanded",
             "new_photo", "device-1", "\(day) 11:00:00+00", "\(day) 12:00:00.5+00", "\\N", "\\N", "{}"].joined(separator: "\t") + "\n"
        }.joined()
        let file = "events-\(day).tsv.gz"
        _ = try RetentionFixtures.shell("gzip -c > '\(directory)/\(file)'", input: Data(lines.utf8))
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file)))
        let manifest = """
            {"format": "engage-log-archive", "version": 1,
             "columns": ["position", "transaction_id", "event_id", "app_id", "notification_id", "type", "category", "device_id",
                         "occurred_at", "recorded_at", "experiment_id", "experiment_arm", "payload"],
             "days": [{"day": "\(day)", "file": "\(file)", "events": 3, "bytes": \(bytes.count),
                       "sha256": "\(Hex.encode(SHA256.hash(bytes)))", "archived_at": "2026-01-01T00:00:00Z"}]}
            """
        try Data(manifest.utf8).write(to: URL(fileURLWithPath: directory + "/manifest.json"))
        return day
    }
}
