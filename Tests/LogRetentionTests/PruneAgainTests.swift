import EngageCore
import EventStore
import Foundation
import LogRetention
import Postgres
import Testing
import TestSupport

/// A prune leaves the week that straddles its cut whole, and a prune into an archive that already
/// lists a day never replaces that day's file with less than it holds.
@Suite("Log prune of weeks seen before")
struct PruneAgainTests {
    @Test func theWeekThatStraddlesTheCutKeepsEveryRow() async throws {
        let fixtures = try RetentionFixtures()
        let olderThan = Self.daysWithACutInsideItsWeek()
        // The day before the cut lies in the cut's own week; two weeks further back, in a week
        // wholly before it.
        let straddling = try await fixtures.seed(RetentionFixtures.events(notifications: 6, tag: "straddling"), daysAgo: olderThan + 1)
        try await fixtures.seed(RetentionFixtures.events(notifications: 4, tag: "whole"), daysAgo: olderThan + 14)
        let partitionsBefore = try await fixtures.pool.withConnection { try EventPartitions.list(on: $0) }

        let report = try await fixtures.pruner(olderThan: olderThan).run()

        #expect(report.events == 8)
        #expect(report.plan.partitions.allSatisfy { $0.whole })
        let ids = straddling.map(\.event.eventID.description)
        #expect(try await fixtures.count("SELECT count(*) FROM events WHERE event_id = ANY(\(ids)::uuid[])") == 12)
        #expect(try await fixtures.count("SELECT count(*) FROM event_ids WHERE event_id = ANY(\(ids)::uuid[])") == 12)
        let partitionsAfter = try await fixtures.pool.withConnection { try EventPartitions.list(on: $0) }
        #expect(partitionsAfter.count == partitionsBefore.count - 1)
        #expect(partitionsAfter.contains { $0.lower.map { $0 < report.plan.cut } == true && $0.upper > report.plan.cut })
    }

    @Test func aPruneOfAWeekRestoredInPartKeepsTheArchivedEventsTheLogLacks() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 20, tag: "d45"), daysAgo: 45)
        let before = try await fixtures.log()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        #expect(first.days.map(\.events) == [40])
        // The log as a restore cut short leaves it: the week back, with part of its day.
        #expect(try await fixtures.restorer(directory).run().restored == 40)
        _ = try await fixtures.pool.withConnection { connection in
            try connection.execute("""
                WITH gone AS (DELETE FROM events WHERE notification_id IN ('d45-0', 'd45-1', 'd45-2') RETURNING event_id)
                DELETE FROM event_ids WHERE event_id IN (SELECT event_id FROM gone)
                """)
        }
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 34)

        let again = try await fixtures.pruner(olderThan: 31, archive: directory).run()

        // The day keeps its 40 events in the archive, in the manifest, in the record and in the
        // prune's report (which gives a merged day's count, as docs/retention.md says).
        #expect(again.days.map(\.events) == [40])
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/manifest.json"))) as? [String: Any]
        #expect((manifest?["days"] as? [[String: Any]])?.map { $0["events"] as? Int } == [40])
        #expect(try await fixtures.pool.withConnection { try PrunedDays.all(on: $0) }.map(\.events) == [40])
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)
        let restored = try await fixtures.restorer(directory).run()
        #expect(restored.restored == 40)
        #expect(try await fixtures.log() == before)
        #expect(try await fixtures.pool.withConnection { try PrunedDays.missing(on: $0) }.isEmpty)
    }

    /// A day pruned again, into another archive, after a restore, then restored from the first
    /// archive is back, whichever archive its events came from: it is not listed as missing.
    @Test func aDayRestoredFromTheFirstArchiveAfterAPruneIntoAnotherIsNotMissing() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 10, tag: "d45"), daysAgo: 45)
        let before = try await fixtures.log()
        let first = try RetentionFixtures.temporaryDirectory()
        let second = try RetentionFixtures.temporaryDirectory()
        defer { for directory in [first, second] { try? FileManager.default.removeItem(atPath: directory) } }
        #expect(try await fixtures.pruner(olderThan: 31, archive: first).run().events == 20)
        #expect(try await fixtures.restorer(first).run().restored == 20)
        // Restored in part (as a restore cut short leaves it), so the second archive's file holds
        // less than the first's.
        _ = try await fixtures.pool.withConnection { connection in
            try connection.execute("""
                WITH gone AS (DELETE FROM events WHERE notification_id IN ('d45-0', 'd45-1', 'd45-2') RETURNING event_id)
                DELETE FROM event_ids WHERE event_id IN (SELECT event_id FROM gone)
                """)
        }
        #expect(try await fixtures.pruner(olderThan: 31, archive: second).run().events == 14)
        let record = try await fixtures.pool.withConnection { try PrunedDays.missing(on: $0) }
        #expect(record.count == 1)
        // The read models rebuilt without it meanwhile: the restore says they count it again only
        // after a rebuild.
        try await fixtures.pool.withConnection { try PrunedDays.markRebuiltWithout(on: $0) }

        let restored = try await fixtures.restorer(first).run()
        #expect(restored.restored == 20)
        #expect(restored.days.map(\.rebuiltWithout) == [true])
        #expect(try await fixtures.log() == before)
        #expect(try await fixtures.pool.withConnection { try PrunedDays.missing(on: $0) }.isEmpty)
    }

    /// Days back to a cut (the start of that UTC day) outside the idempotency window whose day
    /// and the day after are neither a Monday (a week's first day), so that the day before it lies
    /// in its week even if midnight passes while the test runs.
    static func daysWithACutInsideItsWeek() -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let now = Date()
        var days = 32
        // Gregorian weekdays: 1 Sunday, 2 Monday, 3 Tuesday.
        while [2, 3].contains(calendar.component(.weekday, from: now.addingTimeInterval(-86_400 * Double(days)))) { days += 1 }
        return days
    }
}
