import ClientTestSupport
import EngageClient
import Foundation
import Testing
@testable import EngageNotificationService

/// The extension keeps what it attached, as the server's model assumes: the next push offering
/// the same file reads it instead of downloading it, under any strategy, and `cached` prefers it.
@Suite struct KeptMediaTests {
    /// A client, a media host serving the same 20,000-byte JPEG at every URL, and pushes through
    /// sessions with the client's cache.
    final class Fixture {
        let container = Container()
        let downloads = Container()
        let client: EngageClient
        let host: FaultInjector

        init() throws {
            try FileManager.default.createDirectory(at: downloads.url, withIntermediateDirectories: true)
            client = try makeClient(container, port: try FaultInjector.closedPort(), key: "egk_x")
            host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")],
                                                   body: MediaSamples.jpeg(20_000), declareLength: true))
        }

        deinit {
            host.stop()
            container.remove()
            downloads.remove()
        }

        func media(_ variant: String, _ path: String, bytes: Int = 20_000) -> PushPayload.Media {
            PushPayload.Media(variant: variant, url: host.url.appendingPathComponent(path), kind: .image, bytes: bytes)
        }

        /// One push; the `delivered` event's attachment.
        func push(_ id: String, strategy: String, media: [PushPayload.Media],
                  attach: @escaping (DownloadedMedia, FakeContent) throws -> FakeContent = { media, content in
                      FakeContent(title: content.title, attachment: media.file.lastPathComponent)
                  }) async throws -> [String: Any] {
            let probe = SessionProbe()
            let session = makeSession(client: client, payload: PushPayload(notificationID: id, strategy: strategy, media: media),
                                      notificationID: id, probe: probe, directory: downloads.url, attach: attach)
            session.start()
            await probe.finished()
            #expect(probe.deliveries.count == 1)
            return try #require(try queuedDelivered(container, notificationID: id)["attachment"] as? [String: Any])
        }
    }

    @Test func aFileAttachedOnceIsReadTheNextTimeAndCachedPrefersIt() async throws {
        let fixture = try Fixture()
        // The names give the parts.
        let original = fixture.media("original", "o.jpg")
        let thumbnail = fixture.media("thumbnail", "t.jpg")
        func push(_ id: String, _ strategy: String) async throws -> (variant: String?, source: String?, downloads: Int) {
            let attachment = try await fixture.push(id, strategy: strategy, media: [original, thumbnail])
            return (attachment["variant"] as? String, attachment["source"] as? String, fixture.host.hits.count)
        }

        // Nothing kept: `cached` downloads the thumbnail, as the model does with an empty cache.
        #expect(try await push("n-1", "cached") == ("thumbnail", "network", 1))
        // Kept: read, not downloaded.
        #expect(try await push("n-2", "cached") == ("thumbnail", "cache", 1))
        #expect(try await push("n-3", "full") == ("original", "network", 2))
        // The original kept too: `cached` prefers it.
        #expect(try await push("n-4", "cached") == ("original", "cache", 2))
        #expect(try await push("n-5", "thumbnail") == ("thumbnail", "cache", 2))
        // The same URL with another size is other content: downloaded again.
        let attachment = try await fixture.push("n-6", strategy: "full", media: [fixture.media("original", "o.jpg", bytes: 30_000)])
        #expect(attachment["source"] as? String == "network" && fixture.host.hits.count == 3)
        // The copies attached are the session's own: the kept files stay.
        let cache = MediaCache(container: fixture.container.url)
        #expect(cache.entry(for: original.url, now: Date()) != nil && cache.entry(for: thumbnail.url, now: Date()) != nil)
    }

    /// A file iOS refused to attach is not kept: the model counts only what was attached.
    @Test func aFileNotAttachedIsNotKept() async throws {
        let fixture = try Fixture()
        let original = fixture.media("original", "o.jpg")
        struct Refused: Error {}
        let attachment = try await fixture.push("n-1", strategy: "full", media: [original], attach: { _, _ in throw Refused() })
        #expect(attachment["source"] as? String == "network")
        let cache = MediaCache(container: fixture.container.url)
        #expect(cache.entry(for: original.url, now: Date()) == nil)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: cache.directory.path)) ?? []).isEmpty)
    }
}
