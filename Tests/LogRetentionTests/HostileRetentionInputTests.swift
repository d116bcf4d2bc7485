import EngageCore
import EventStore
import Foundation
@testable import LogRetention
import Postgres
import Testing
import TestSupport

/// Numbers a prune or a restore takes from outside (the age asked for, an archive's manifest,
/// which anyone may edit) end in a typed refusal, never in a trap of the whole command.
@Suite("Retention inputs out of range")
struct HostileRetentionInputTests {
    /// 200 million days is about 550,000 years: in microseconds more than an Int64 holds.
    @Test func anAgeBeyondAnyLogIsRefusedBeforeAnythingGoes() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 5, tag: "old"), daysAgo: 40)

        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.pruner(olderThan: 200_000_000).run() }

        #expect(error == .olderThanTooLong(requested: "200000000 days", longest: "36500 days"))
        #expect(error?.code == "retention.older_than_too_long")
        #expect(error?.description == "refusing to prune events older than 200000000 days: at most 36500 days back (100 years)")
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 10)
    }

    /// Two days whose files are sound but whose counts, added up, pass Int.max: refused at the
    /// first, whose file holds no such number of events (each file's lines are counted first).
    @Test func aManifestWhoseCountsOverflowIsACorruptArchive() async throws {
        let fixtures = try RetentionFixtures()
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var manifest = ArchiveManifest()
        for day in ["2026-10-01", "2026-10-02"] {
            let file = ArchiveManifest.fileName(forDay: day)
            let writer = try GzipFileWriter(path: directory + "/" + file)
            let (bytes, sha256) = try writer.finish()
            manifest.record(ArchiveManifest.Day(day: day, file: file, events: Int.max, bytes: bytes, sha256: sha256,
                                                archivedAt: "2026-11-01T00:00:00Z"))
        }
        try manifest.save(to: directory)

        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.restorer(directory).run() }

        #expect(error == .corruptArchive(file: directory + "/" + ArchiveManifest.fileName(forDay: "2026-10-01"),
                                         problem: "it holds 0 events, the manifest says \(Int.max); nothing was restored"))
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)
    }

    @Test func aManifestWithANegativeCountIsNotAnArchive() async throws {
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var manifest = ArchiveManifest()
        manifest.record(ArchiveManifest.Day(day: "2026-10-01", file: "events-2026-10-01.tsv.gz", events: -1, bytes: 20,
                                            sha256: String(repeating: "0", count: 64), archivedAt: "2026-11-01T00:00:00Z"))
        try manifest.save(to: directory)

        #expect(throws: LogRetentionError.corruptArchive(file: directory + "/manifest.json",
                                                         problem: "entry 'events-2026-10-01.tsv.gz' has a negative count or size")) {
            try ArchiveManifest.load(from: directory, creating: false)
        }
    }

    /// A rerun of a legacy prune merges into a day the manifest lists: its count, edited to
    /// Int.max, must not size an allocation; the file's lines disagree with it, so nothing goes.
    @Test func anInflatedCountOfADayMergedAgainStopsTheRerun() async throws {
        let (fixtures, directory) = try await LegacyRerunTests.archivedAndRestored()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LegacyRerunTests.deleteOldest(130, fixtures)
        var manifest = try ArchiveManifest.load(from: directory, creating: false)
        var inflated = try #require(manifest.days.last)
        inflated.events = Int.max
        manifest.record(inflated)
        try manifest.save(to: directory)
        let log = try await fixtures.log()

        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.pruner(olderThan: 31, archive: directory).run() }

        #expect(error == .corruptArchive(file: directory + "/" + inflated.file,
                                         problem: "it holds 100 events, the manifest says \(Int.max); nothing was pruned"))
        #expect(try await fixtures.log() == log)
    }
}
