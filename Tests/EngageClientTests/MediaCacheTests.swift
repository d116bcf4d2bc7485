import Foundation
import Testing
@testable import EngageNotificationService

/// The extension's kept files: read within the time to live, kept whole, trimmed by age and size.
@Suite struct MediaCacheTests {
    static let url = URL(string: "https://cdn.example.com/p/1.jpg")!

    static func file(_ bytes: Int, in container: Container) throws -> URL {
        let url = container.url.appendingPathComponent("download-\(UUID().uuidString).jpg")
        try FileManager.default.createDirectory(at: container.url, withIntermediateDirectories: true)
        try Data(MediaSamples.jpeg(bytes)).write(to: url)
        return url
    }

    static func keep(_ cache: MediaCache, _ file: URL, for url: URL = url, at now: Date) throws {
        let staged = try #require(cache.stage(file))
        cache.keep(staged: staged, type: .jpeg, for: url, now: now)
    }

    @Test func aKeptFileIsReadWithinItsTimeToLiveOnly() throws {
        let container = Container()
        defer { container.remove() }
        let cache = MediaCache(container: container.url)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(cache.entry(for: Self.url, now: now) == nil)
        try Self.keep(cache, try Self.file(5000, in: container), at: now)

        let entry = try #require(cache.entry(for: Self.url, now: now.addingTimeInterval(86_400)))
        #expect(entry.type == .jpeg && entry.bytes == 5000)
        #expect(try Data(contentsOf: entry.file) == Data(MediaSamples.jpeg(5000)))
        #expect(cache.entry(for: Self.url, now: now.addingTimeInterval(86_401)) == nil)
        // Another URL is another file; a clock set back since the file was kept reads it as just
        // kept, as the model does.
        #expect(cache.entry(for: URL(string: "https://cdn.example.com/p/2.jpg")!, now: now) == nil)
        #expect(cache.entry(for: Self.url, now: now.addingTimeInterval(-60)) != nil)
    }

    @Test func keepingAgainReplacesAndStagedCopiesThatAreDiscardedLeaveNothing() throws {
        let container = Container()
        defer { container.remove() }
        let cache = MediaCache(container: container.url)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try Self.keep(cache, try Self.file(5000, in: container), at: now)
        try Self.keep(cache, try Self.file(7000, in: container), at: now.addingTimeInterval(10))
        #expect(cache.entry(for: Self.url, now: now.addingTimeInterval(20))?.bytes == 7000)
        let staged = try #require(cache.stage(try Self.file(9000, in: container)))
        cache.discard(staged)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.directory.path).count == 1)
    }

    @Test func theOldestGoFirstBeyondTheSizeLimitAndExpiredFilesAreRemoved() throws {
        let container = Container()
        defer { container.remove() }
        let cache = MediaCache(container: container.url, timeToLive: 3_600, maxBytes: 20_000)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let urls = (0..<4).map { URL(string: "https://cdn.example.com/p/\($0).jpg")! }
        for (index, url) in urls.enumerated() {
            try Self.keep(cache, try Self.file(8000, in: container), for: url, at: now.addingTimeInterval(Double(index)))
        }
        // 4 x 8,000 bytes against 20,000: the two kept first are gone.
        #expect(urls.map { cache.entry(for: $0, now: now.addingTimeInterval(10)) != nil } == [false, false, true, true])
        // An hour after the third was kept, keeping another removes it as expired.
        try Self.keep(cache, try Self.file(100, in: container), for: urls[0], at: now.addingTimeInterval(3_603))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.directory.path).count == 2)
    }
}
