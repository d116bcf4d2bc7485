import ClientTestSupport
import EngageClient
import EngageNotificationService
import Foundation
import Testing

/// File bodies whose leading bytes are those of their type (the rest is filler).
enum MediaSamples {
    static func jpeg(_ size: Int = 4096) -> [UInt8] { [0xFF, 0xD8, 0xFF, 0xE0] + filler(size - 4) }
    static func png(_ size: Int = 4096) -> [UInt8] { [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + filler(size - 8) }
    static func m4a(_ size: Int = 4096) -> [UInt8] { [0, 0, 0, 0x20] + Array("ftypM4A ".utf8) + filler(size - 12) }

    static func filler(_ count: Int) -> [UInt8] { (0..<max(0, count)).map { UInt8(truncatingIfNeeded: $0 &* 31) } }
}

@Suite("Notification Service Extension: types, limits, deadlines")
struct MediaTypeTests {
    @Test func theMIMETypeComesFirstThenTheNamesThenTheBytes() {
        let jpgURL = URL(string: "https://cdn.example.com/p/1.jpg")
        let bare = URL(string: "https://cdn.example.com/p/1")
        // S3's default type says nothing: the URL's extension decides.
        #expect(MediaTypeDetector.detect(mimeType: "binary/octet-stream", url: jpgURL, contentDisposition: nil, leadingBytes: [])
                == .supported(.jpeg))
        // A declared type wins over the name.
        #expect(MediaTypeDetector.detect(mimeType: "image/png; charset=binary", url: jpgURL, contentDisposition: nil, leadingBytes: [])
                == .supported(.png))
        // No type, no extension: the filename parameter, then the leading bytes.
        #expect(MediaTypeDetector.detect(mimeType: "application/octet-stream", url: bare,
                                         contentDisposition: #"attachment; filename="clip.m4a""#, leadingBytes: []) == .supported(.m4a))
        #expect(MediaTypeDetector.detect(mimeType: nil, url: bare, contentDisposition: nil, leadingBytes: MediaSamples.png(16))
                == .supported(.png))
        #expect(MediaTypeDetector.detect(mimeType: nil, url: bare, contentDisposition: nil, leadingBytes: [1, 2, 3]) == .unknown)
        #expect(MediaTypeDetector.detect(mimeType: "image/webp", url: jpgURL, contentDisposition: nil, leadingBytes: []) == .unsupported("image/webp"))
        #expect(MediaTypeDetector.fileName(inContentDisposition: #"inline; filename="a.gif"; filename*=UTF-8''photo%201.png"#) == "photo 1.png")
        #expect(MediaTypeDetector.fileName(inContentDisposition: "attachment") == nil)
    }

    /// Every type Apple lists is accepted, by MIME type, by extension and by signature, with
    /// the type hint Apple's documentation names; so are TIFF, QuickTime, AAC and Core Audio, which
    /// the pipeline model counts as attachable.
    @Test func everyFormatAppleListsIsAccepted() {
        let cases: [(mime: String, name: String, bytes: [UInt8], type: MediaType)] = [
            ("image/jpeg", "a.jpeg", [0xFF, 0xD8, 0xFF, 0xDB], .jpeg),
            ("image/png", "a.png", MediaSamples.png(16), .png),
            ("image/gif", "a.gif", Array("GIF89a".utf8), .gif),
            ("audio/x-aiff", "a.aif", Array("FORM\0\0\0\0AIFF".utf8), .aiff),
            ("audio/wav", "a.wav", Array("RIFF\0\0\0\0WAVE".utf8), .wav),
            ("audio/mpeg", "a.mp3", Array("ID3".utf8) + [3, 0], .mp3),
            ("audio/x-m4a", "a.m4a", MediaSamples.m4a(16), .m4a),
            ("video/mpeg", "a.mpg", [0, 0, 1, 0xBA], .mpeg),
            ("video/mpeg2", "a.m2v", [], .mpeg2),
            ("video/mp4", "a.mp4", [0, 0, 0, 0x18] + Array("ftypisom".utf8), .mp4),
            ("video/x-msvideo", "a.avi", Array("RIFF\0\0\0\0AVI ".utf8), .avi),
            ("image/tiff", "a.tif", Array("II*\0".utf8) + [8, 0, 0, 0], .tiff),
            ("image/x-tiff", "a.tiff", Array("MM\0*".utf8) + [0, 0, 0, 8], .tiff),
            ("video/quicktime", "a.mov", [0, 0, 0, 0x14] + Array("ftypqt  ".utf8), .quickTime),
            ("audio/aac", "a.aac", [0xFF, 0xF1, 0x50, 0x80], .aac),
            ("audio/x-aac", "a.aac", [0xFF, 0xF9, 0x50, 0x80], .aac),
            ("audio/x-caf", "a.caf", Array("caff".utf8) + [0, 1, 0, 0], .coreAudio),
        ]
        for item in cases {
            #expect(MediaTypeDetector.fromMIMEType(item.mime) == .supported(item.type), "\(item.mime)")
            #expect(MediaTypeDetector.fromFileName(item.name) == .supported(item.type), "\(item.name)")
            if !item.bytes.isEmpty {
                let sniffed = MediaTypeDetector.fromLeadingBytes(item.bytes).kindAndFormat
                #expect(sniffed?.0 == item.type.kind && sniffed?.1 == item.type.format, "\(item.name)")
            }
        }
        #expect(Set(MediaType.supported.map(\.uti)) == ["public.jpeg", "public.png", "com.compuserve.gif", "public.aiff-audio",
                                                         "com.microsoft.waveform-audio", "public.mp3", "public.mpeg-4-audio",
                                                         "public.mpeg", "public.mpeg-2-video", "public.mpeg-4", "public.avi",
                                                         "public.tiff", "com.apple.quicktime-movie", "public.aac-audio",
                                                         "com.apple.coreaudio-format"])
        // An MPEG audio frame without a tag (layer III, not ADTS's layer 0); WebP is known and refused.
        #expect(MediaTypeDetector.fromLeadingBytes([0xFF, 0xFB, 0x90, 0x64]) == .supported(.mp3))
        #expect(MediaTypeDetector.fromLeadingBytes([0xFF, 0xF3, 0x90, 0x64]) == .supported(.mp3))
        #expect(MediaTypeDetector.fromLeadingBytes(Array("RIFF\0\0\0\0WEBP".utf8)) == .unsupported("webp"))
        #expect(MediaTypeDetector.kind(ofUTI: "com.compuserve.gif") == .gif)
        #expect(MediaTypeDetector.kind(ofUTI: "public.mpeg-4") == .video)
        #expect(MediaTypeDetector.kind(ofUTI: "public.mpeg-4-audio") == .audio)
        #expect(MediaTypeDetector.kind(ofUTI: "com.example.custom") == nil)
        // Video and audio iOS attaches under types of their own are not counted as images.
        #expect(MediaTypeDetector.kind(ofUTI: "com.apple.m4v-video") == .video)
        #expect(MediaTypeDetector.kind(ofUTI: "public.3gpp") == .video)
        #expect(MediaTypeDetector.kind(ofUTI: "com.apple.m4a-audio") == .audio)
        #expect(MediaTypeDetector.kind(ofUTI: "com.example.flac-audio") == .audio)
        #expect(MediaTypeDetector.kind(ofUTI: "org.example.matroska-video") == .video)
    }

    @Test func theDeadlineComesFromTheTimeLeft() {
        let policy = ServiceExtensionPolicy(timeLimit: .seconds(30), reserve: .seconds(2), maxDownload: .seconds(25), sendBudget: .seconds(2))
        #expect(policy.downloadTimeout(elapsed: .zero) == .seconds(25))
        #expect(policy.downloadTimeout(elapsed: .seconds(10)) == .seconds(18))
        #expect(policy.downloadTimeout(elapsed: .seconds(29)) == .zero)
        #expect(policy.sendBudget(elapsed: .seconds(1)) == .seconds(2))
        #expect(policy.sendBudget(elapsed: .milliseconds(27_500)) == .milliseconds(500))
        #expect(policy.sendBudget(elapsed: .seconds(40)) == .zero)
        #expect(policy.sizeLimit(for: .image) == 10_000_000)
        #expect(policy.sizeLimit(for: .audio) == 5_000_000)
        #expect(policy.sizeLimit(for: .video) == 50_000_000)
        #expect(policy.sizeLimit(for: nil) == 50_000_000)
    }

    @Test func theStrategyChoosesTheVariant() {
        let policy = ServiceExtensionPolicy()
        let original = PushPayload.Media(variant: "original", url: URL(string: "https://x/o.jpg")!)
        let thumbnail = PushPayload.Media(variant: "thumbnail", url: URL(string: "https://x/t.jpg")!)
        let poster = PushPayload.Media(variant: "poster", url: URL(string: "https://x/p.jpg")!)
        let payload = PushPayload(strategy: "thumbnail", media: [original, thumbnail, poster])
        #expect(policy.strategy(for: payload) == .thumbnail)
        #expect(policy.media(for: payload, strategy: .thumbnail) == thumbnail)
        #expect(policy.media(for: payload, strategy: .full) == original)
        // A poster stands in for a video, or an original of no stated kind; for an image, the original.
        #expect(policy.media(for: payload, strategy: .poster) == poster)
        var video = original
        video.kind = .video
        #expect(policy.media(for: PushPayload(media: [video, thumbnail, poster]), strategy: .poster) == poster)
        var image = original
        image.kind = .image
        #expect(policy.media(for: PushPayload(media: [image, thumbnail, poster]), strategy: .poster) == image)
        // `cached`: the extension keeps no cache, so it downloads what the model does with none cached.
        #expect(policy.media(for: payload, strategy: .cached) == thumbnail)
        #expect(policy.media(for: payload, strategy: .none) == nil)
        #expect(policy.media(for: PushPayload(media: [original]), strategy: .thumbnail) == original)
        #expect(policy.media(for: PushPayload(media: [poster]), strategy: .full) == poster)
        #expect(policy.media(for: PushPayload(), strategy: .full) == nil)
        // A strategy this client does not know: the default.
        #expect(policy.strategy(for: PushPayload(strategy: "hologram")) == .full)
    }
}

extension MediaTypeGuess {
    var kindAndFormat: (AttachmentKind, MediaFormat)? {
        if case let .supported(type) = self { return (type.kind, type.format) }
        return nil
    }
}

/// Runs one download to its end.
func download(_ url: URL, policy: ServiceExtensionPolicy = ServiceExtensionPolicy(), timeout: Duration = .seconds(20),
              directory: URL) async -> DownloadResult {
    await withCheckedContinuation { continuation in
        let download = MediaDownload(url: url, variant: "original", policy: policy, directory: directory, timeout: timeout) {
            continuation.resume(returning: $0)
        }
        download.start()
    }
}

@Suite("Notification Service Extension: downloads")
struct MediaDownloadTests {
    @Test func aJPEGServedAsBinaryOctetStreamIsRecognisedByItsURL() async throws {
        let body = MediaSamples.jpeg(20_000)
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "binary/octet-stream")], body: body, declareLength: true))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        guard case let .downloaded(media) = await download(host.url.appendingPathComponent("p/1.JPG"), directory: directory.url) else {
            Issue.record("expected a download")
            return
        }
        #expect(media.type == .jpeg)
        #expect(media.bytes == body.count)
        #expect(media.file.pathExtension == "jpg")
        #expect(Array(try Data(contentsOf: media.file)) == body)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == [media.file.lastPathComponent])
    }

    /// The first bytes have the last word over the headers and the URL: an error page served
    /// with 200 for `photo.jpg` (as `text/html`, or even as `image/jpeg`) is refused, not
    /// attached as a JPEG; a PNG served as `image/jpeg` is attached as the PNG it is.
    @Test(arguments: [("text/html; charset=utf-8", Array("<!doctype html><html><body>Sign in to the Wi-Fi</body></html>".utf8)),
                      ("image/jpeg", Array("\u{FEFF}  <html><head><title>502</title></head></html>".utf8)),
                      ("image/jpeg", Array(#"{"error":"not found"}"#.utf8))])
    func aPageServedForAnImageIsNotAttached(contentType: String, body: [UInt8]) async throws {
        let (result, filesLeft) = try await Self.downloadPhotoJPG(contentType: contentType, body: body)
        #expect(result == .unsupportedFormat("text"))
        #expect(filesLeft.isEmpty)
    }

    @Test func aPNGServedAsJPEGIsAttachedAsThePNGItIs() async throws {
        let (result, _) = try await Self.downloadPhotoJPG(contentType: "image/jpeg", body: MediaSamples.png())
        guard case let .downloaded(media) = result else {
            Issue.record("expected a download, got \(result)")
            return
        }
        #expect(media.type == .png)
        #expect(media.file.pathExtension == "png")
    }

    /// An ISO media file of a generic brand served as `audio/mp4` stays MPEG-4 audio (its bytes
    /// say only "MPEG-4"), and keeps audio's 5 MB limit.
    @Test func audioInAGenericMP4ContainerStaysAudio() async throws {
        let body: [UInt8] = [0, 0, 0, 0x20] + Array("ftypisom".utf8) + MediaSamples.filler(4_000)
        let (result, _) = try await Self.downloadPhotoJPG(contentType: "audio/mp4", body: body)
        guard case let .downloaded(media) = result else {
            Issue.record("expected a download, got \(result)")
            return
        }
        #expect(media.type == .m4a)
    }

    /// An ISO file branded QuickTime served as `video/mp4` (an iPhone's .mov renamed) is attached
    /// as MP4, as before the bytes were read; served as QuickTime, as QuickTime.
    @Test func aQuickTimeFileServedAsMP4IsAttachedAsMP4() async throws {
        let body: [UInt8] = [0, 0, 0, 0x14] + Array("ftypqt  ".utf8) + MediaSamples.filler(4_000)
        let (asMP4, _) = try await Self.downloadPhotoJPG(contentType: "video/mp4", body: body)
        guard case let .downloaded(media) = asMP4 else {
            Issue.record("expected a download, got \(asMP4)")
            return
        }
        #expect(media.type == .mp4)
        let (asQuickTime, _) = try await Self.downloadPhotoJPG(contentType: "video/quicktime", body: body)
        guard case let .downloaded(movie) = asQuickTime else {
            Issue.record("expected a download, got \(asQuickTime)")
            return
        }
        #expect(movie.type == .quickTime)
    }

    /// An ID3v2 tag is metadata, not a format: one in front of AAC frames served as `audio/aac`
    /// stays AAC (it was attached as MP3, and counted so); served as MP3, or under a name of
    /// another kind (`photo.jpg` with `application/octet-stream`), a tagged stream is MP3.
    @Test func anID3TaggedAACStreamStaysAAC() async throws {
        let tag = Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 10] + [UInt8](repeating: 0, count: 10)
        let body = tag + [0xFF, 0xF1, 0x50, 0x80] + MediaSamples.filler(4_000)
        for (contentType, expected) in [("audio/aac", MediaType.aac), ("audio/mpeg", .mp3), ("application/octet-stream", .mp3)] {
            let (result, _) = try await Self.downloadPhotoJPG(contentType: contentType, body: body)
            guard case let .downloaded(media) = result else {
                Issue.record("expected a download, got \(result)")
                continue
            }
            #expect(media.type == expected, "\(contentType)")
        }
    }

    /// `body` served as `contentType` for `p/photo.jpg`: the outcome, and the files left.
    static func downloadPhotoJPG(contentType: String, body: [UInt8]) async throws -> (DownloadResult, [String]) {
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", contentType)], body: body, declareLength: true))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        let result = await download(host.url.appendingPathComponent("p/photo.jpg"), directory: directory.url)
        return (result, try FileManager.default.contentsOfDirectory(atPath: directory.url.path))
    }

    @Test func withoutATypeTheLeadingBytesDecide() async throws {
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [], body: MediaSamples.png(), declareLength: false))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        let result = await download(host.url.appendingPathComponent("media/123"), directory: directory.url)
        guard case let .downloaded(media) = result else {
            Issue.record("expected a download, got \(result)")
            return
        }
        #expect(media.type == .png)
        #expect(media.file.pathExtension == "png")
    }

    @Test func aDeclaredLengthOverTheLimitIsRefusedBeforeTheBody() async throws {
        let host = try FaultInjector(reply: .stall(status: 200, headers: [("Content-Type", "image/jpeg")], body: [], declaredLength: 10_000_001))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        #expect(await download(host.url.appendingPathComponent("big.jpg"), directory: directory.url) == .tooLarge(bytes: 10_000_001, kind: .image))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    /// No Content-Length: the limit is checked as bytes arrive, and the download stops there.
    @Test func aStreamOverTheLimitStopsAtTheLimit() async throws {
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [], body: MediaSamples.m4a(300_000), declareLength: false))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        let policy = ServiceExtensionPolicy(sizeLimits: [.audio: 100_000, .image: 200_000, .video: 200_000, .gif: 200_000])
        let result = await download(host.url.appendingPathComponent("clip"), policy: policy, directory: directory.url)
        guard case let .tooLarge(bytes, kind) = result else {
            Issue.record("expected too large, got \(result)")
            return
        }
        #expect(bytes > 100_000 && bytes < 300_000)
        #expect(kind == .audio)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test func anErrorStatusIsReportedWithItsStatus() async throws {
        let host = try FaultInjector(reply: .respond(status: 404, headers: [("Content-Type", "image/jpeg")], body: "gone"))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        #expect(await download(host.url.appendingPathComponent("p.jpg"), directory: directory.url) == .httpStatus(404))
    }

    /// A type the headers name that attachments do not take (`image/webp`, a `.webp` name) does
    /// not stop the download before the bytes have spoken: a JPEG a CDN labels `image/webp` is
    /// attached as the JPEG it is; a real WebP, or bytes of no known type, is refused.
    @Test(arguments: [
        ("image/webp", "p.jpg", MediaSamples.jpeg(), .jpeg as MediaType?, nil as String?),
        ("application/octet-stream", "p.webp", MediaSamples.jpeg(), .jpeg, nil),
        ("image/webp", "p.jpg", Array("RIFF".utf8) + [0, 1, 0, 0] + Array("WEBPVP8 ".utf8) + [UInt8](repeating: 7, count: 4_000), nil, "webp"),
        ("image/webp", "p.jpg", [UInt8](repeating: 1, count: 4_000), nil, "image/webp"),
    ])
    func anUnsupportedTypeInTheHeadersLeavesTheBytesTheLastWord(_ contentType: String, _ name: String, _ body: [UInt8],
                                                               _ attachedAs: MediaType?, _ refusedAs: String?) async throws {
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", contentType)], body: body, declareLength: true))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        let result = await download(host.url.appendingPathComponent(name), directory: directory.url)
        if let refusedAs {
            #expect(result == .unsupportedFormat(refusedAs))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
        } else {
            guard case let .downloaded(media) = result else {
                Issue.record("expected a download, got \(result)")
                return
            }
            #expect(media.type == attachedAs)
            #expect(Array(try Data(contentsOf: media.file)) == body)
        }
    }

    /// A host that sends half the file and stops: the deadline ends the download.
    @Test func aStalledDownloadEndsAtTheDeadline() async throws {
        let host = try FaultInjector(reply: .stall(status: 200, headers: [("Content-Type", "image/jpeg")], body: MediaSamples.jpeg(1000),
                                                   declaredLength: 2000))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        #expect(await download(host.url.appendingPathComponent("p.jpg"), timeout: .milliseconds(300), directory: directory.url) == .timedOut)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }
}
