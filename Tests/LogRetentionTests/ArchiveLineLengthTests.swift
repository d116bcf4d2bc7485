import EngageCore
import Foundation
@testable import LogRetention
import Testing
import TestSupport

/// A day file with one line longer than any archived event (a gzip stream of 66 MiB without a
/// newline here; a hostile one inflates to gigabytes) is refused once its line passes the bound,
/// before the reader's buffer grows further.
@Suite("Archive line length")
struct ArchiveLineLengthTests {
    /// `ArchiveLine.maxBytes`, written out so that the test says the number the docs give.
    static let limit = 66 * 1_048_576 + 4096

    /// A gzip file of `bytes` zero bytes and no newline, and a manifest listing it as one event.
    static func archiveWithoutNewline(bytes: Int) throws -> (directory: String, file: String) {
        let directory = try RetentionFixtures.temporaryDirectory()
        let file = ArchiveManifest.fileName(forDay: "2026-10-01")
        let writer = try GzipFileWriter(path: directory + "/" + file)
        let chunk = [UInt8](repeating: 0x30, count: 1 << 20)
        var left = bytes
        while left > 0 {
            try writer.write(chunk[..<min(left, chunk.count)])
            left -= min(left, chunk.count)
        }
        let (size, sha256) = try writer.finish()
        var manifest = ArchiveManifest()
        manifest.record(ArchiveManifest.Day(day: "2026-10-01", file: file, events: 1, bytes: size, sha256: sha256,
                                            archivedAt: "2026-11-01T00:00:00Z"))
        try manifest.save(to: directory)
        return (directory, directory + "/" + file)
    }

    @Test func theBoundIsTheLargestEventsLineAsDocumented() {
        #expect(ArchiveLine.maxBytes == Self.limit)
    }

    @Test func aRestoreRefusesALineLongerThanAnyEventBeforeLoadingAnything() async throws {
        let fixtures = try RetentionFixtures()
        let (directory, file) = try Self.archiveWithoutNewline(bytes: Self.limit + 1)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let error = await #expect(throws: LogRetentionError.self) { try await fixtures.restorer(directory).run() }

        #expect(error == .corruptArchive(
            file: file,
            problem: "a line is longer than \(Self.limit) bytes, more than any archived event can be (damaged, or not written by engage); nothing was restored"))
        #expect(try await fixtures.count("SELECT count(*) FROM events") == 0)
    }

    /// The merge of a legacy rerun reads the day's old file line by line the same way.
    @Test func theMergeRefusesALineLongerThanAnyEvent() throws {
        let (directory, file) = try Self.archiveWithoutNewline(bytes: Self.limit + 1)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var lines = 0

        let error = #expect(throws: LogRetentionError.self) {
            try ArchiveMerge.forEachLine(of: file, outcome: "nothing was pruned") { _ in lines += 1 }
        }

        #expect(error == .corruptArchive(
            file: file,
            problem: "a line is longer than \(Self.limit) bytes, more than any archived event can be (damaged, or not written by engage); nothing was pruned"))
        #expect(lines == 0)
    }

    /// A line of exactly the bound is one an event can make: read, not refused.
    @Test func aLineOfTheBoundIsRead() throws {
        let (directory, file) = try Self.archiveWithoutNewline(bytes: Self.limit)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let error = #expect(throws: LogRetentionError.self) {
            try ArchiveMerge.forEachLine(of: file, outcome: "nothing was pruned") { _ in }
        }

        #expect(error == .corruptArchive(file: file, problem: "its last line is cut short; nothing was pruned"))
    }
}
