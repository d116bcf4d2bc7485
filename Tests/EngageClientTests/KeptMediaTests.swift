import ClientTestSupport
import EngageClient
import Foundation
import Testing
@testable import EngageNotificationService

/// The extension keeps what it attached, as the server's model assumes: the next push offering
/// the same file reads it instead of downloading it, under any strategy, and `cached` prefers it.
@Suite struct KeptMediaTests {
    /// One push through a session with the client's cache; the `delivered` event's attachment.
    static func push(_ id: String, strategy: String, media: [PushPayload.Media], client: EngageClient, container: Container,
                     downloads: URL, attach: @escaping (DownloadedMedia, FakeContent) throws -> FakeContent = { media, content in
                         FakeContent(title: content.title, attachment: media.file.lastPathComponent)
                     }) async throws -> [String: Any] {
        let probe = SessionProbe()
        let session = makeSession(client: client, payload: PushPayload(notificationID: id, strategy: strategy, media: media),
                                  notificationID: id, probe: probe, directory: downloads, attach: attach)
        session.start()
        await probe.finished()
        #expect(probe.deliveries.count == 1)
        return try #require(try queuedDelivered(container, notificationID: id)["attachment"] as? [String: Any])
    }

    @Test func aFileAttachedOnceIsReadTheNextTimeAndCachedPrefersIt() async throws {
        let container = Container()
        defer { container.remove() }
        let downloads = Container()
        try FileManager.default.createDirectory(at: downloads.url, withIntermediateDirectories: true)
        defer { downloads.remove() }
        let client = try makeClient(container, port: try FaultInjector.closedPort(), key: "egk_x")
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")],
                                                   body: MediaSamples.jpeg(20_000), declareLength: true))
        defer { host.stop() }
        let original = PushPayload.Media(variant: "original", url: host.url.appendingPathComponent("o.jpg"), kind: .image, bytes: 20_000)
        // The host serves the same 20,000 bytes at every URL; the names give the parts.
        let thumbnail = PushPayload.Media(variant: "thumbnail", url: host.url.appendingPathComponent("t.jpg"), kind: .image, bytes: 20_000)
        func push(_ id: String, _ strategy: String) async throws -> (variant: String?, source: String?, downloads: Int) {
            let attachment = try await Self.push(id, strategy: strategy, media: [original, thumbnail], client: client,
                                                 container: container, downloads: downloads.url)
            return (attachment["variant"] as? String, attachment["source"] as? String, host.hits.count)
        }

        // Nothing kept: `cached` downloads the thumbnail, as the model does with an empty cache.
        #expect(try await push("n-1", "cached") == ("thumbnail", "network", 1))
        // Kept: read, not downloaded.
        #expect(try await push("n-2", "cached") == ("thumbnail", "cache", 1))
        #expect(try await push("n-3", "full") == ("original", "network", 2))
        // The original kept too: `cached` prefers it.
        #expect(try await push("n-4", "cached") == ("original", "cache", 2))
        #expect(try await push("n-5", "thumbnail") == ("thumbnail", "cache", 2))
        // The same URL with another size is other content: downloaded again, and kept anew.
        let changed = PushPayload.Media(variant: "original", url: original.url, kind: .image, bytes: 30_000)
        let attachment = try await Self.push("n-6", strategy: "full", media: [changed, thumbnail], client: client,
                                             container: container, downloads: downloads.url)
        #expect(attachment["source"] as? String == "network" && host.hits.count == 3)
        // The copies attached are the session's own: the kept files stay.
        let cache = MediaCache(container: container.url)
        #expect(cache.entry(for: original.url, now: Date()) != nil && cache.entry(for: thumbnail.url, now: Date()) != nil)
    }

    /// A file iOS refused to attach is not kept: the model counts only what was attached.
    @Test func aFileNotAttachedIsNotKept() async throws {
        let container = Container()
        defer { container.remove() }
        let downloads = Container()
        try FileManager.default.createDirectory(at: downloads.url, withIntermediateDirectories: true)
        defer { downloads.remove() }
        let client = try makeClient(container, port: try FaultInjector.closedPort(), key: "egk_x")
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")],
                                                   body: MediaSamples.jpeg(20_000), declareLength: true))
        defer { host.stop() }
        let original = PushPayload.Media(variant: "original", url: host.url.appendingPathComponent("o.jpg"), kind: .image, bytes: 20_000)
        struct Refused: Error {}
        let attachment = try await Self.push("n-1", strategy: "full", media: [original], client: client, container: container,
                                             downloads: downloads.url, attach: { _, _ in throw Refused() })
        #expect(attachment["source"] as? String == "network")
        #expect(MediaCache(container: container.url).entry(for: original.url, now: Date()) == nil)
        let cacheDirectory = MediaCache(container: container.url).directory.path
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory)) ?? []).isEmpty)
    }
}
