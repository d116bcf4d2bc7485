import EngageCore
import EventStore
import Foundation
import LogRetention
import Postgres
import Testing
import TestSupport

/// One prune or restore at a time per archive directory: the database's retention lock did not
/// keep two databases' prunes (shards sharing a backup volume) apart, and each saved a manifest
/// loaded before the other's days. A second one is refused at once, and changes nothing.
@Suite("Archive directory lock")
struct ArchiveLockTests {
    /// What another process holds while it prunes into or restores from `directory`.
    static func holdLock(in directory: String) throws -> Int32 {
        let descriptor = open(directory + "/.engage-archive.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0)
        try #require(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        return descriptor
    }

    @Test func aPruneIntoAnArchiveInUseIsRefusedAndRemovesNothing() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 10, tag: "d45"), daysAgo: 45)
        let directory = try RetentionFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let other = try Self.holdLock(in: directory)

        await #expect(throws: LogRetentionError.archiveBusy(directory: directory)) {
            try await fixtures.pruner(olderThan: 31, archive: directory).run()
        }
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 20)
        #expect(!FileManager.default.fileExists(atPath: directory + "/manifest.json"))

        // Once the other is done, the prune goes ahead, and a restore waits for none.
        close(other)
        let report = try await fixtures.pruner(olderThan: 31, archive: directory).run()
        #expect(report.events == 20)
        let held = try Self.holdLock(in: directory)
        await #expect(throws: LogRetentionError.archiveBusy(directory: directory)) {
            try await fixtures.restorer(directory).run()
        }
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)
        close(held)
        #expect(try await fixtures.restorer(directory).run().restored == 20)
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 20)
    }
}
