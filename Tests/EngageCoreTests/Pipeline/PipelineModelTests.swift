import SeededRandom
import Testing
@testable import EngageCore

/// Hand-made pushes with outcomes worked out on paper. Default limits: 50 ms overhead, deadline
/// 28,000 ms (30 s budget, 2 s margin), the extension's own download timeout 25,000 ms, cache
/// reads 2 ms.
@Suite struct PipelineModelTests {
    static let fast = NetworkProfile(throughputBytesPerSecond: 5_000_000, latencyMS: 50)
    static let limits = PipelineLimits()

    static func photo(original: Int, thumbnail: Int = 40_000) -> [MediaVariant] {
        [MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: original, width: 4000, height: 3000),
         MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: thumbnail, width: 400, height: 300)]
    }

    static func run(_ media: [MediaVariant], _ strategy: any AttachmentStrategyModel,
                    network: NetworkProfile = fast, cache: CacheState = .empty,
                    limits: PipelineLimits = limits) -> PipelineOutcome {
        PipelineModel.run(PipelineInput(media: media, network: network, cache: cache), strategy: strategy, limits: limits)
    }

    @Test func defaults() {
        let limits = PipelineLimits()
        #expect(limits.deadlineMS == 28_000)
        #expect(limits.downloadTimeoutMS == 25_000)
        #expect(limits.memoryLimitBytes == 25_165_824)
        #expect(limits.sizeCapBytes[.image] == 10_000_000)
        #expect(limits.sizeCapBytes[.gif] == 10_000_000)
        #expect(limits.sizeCapBytes[.audio] == 5_000_000)
        #expect(limits.sizeCapBytes[.video] == 50_000_000)
        #expect(limits.sizeCapBytes[.noAttachment] == nil)
    }

    @Test func fullAttachesAnImageThatFits() {
        // 50 ms overhead + 50 ms latency + 2,000,000 B at 5 MB/s (400 ms).
        let outcome = Self.run(Self.photo(original: 2_000_000), FullStrategy())
        #expect(outcome == PipelineOutcome(presentation: .rich, outcome: .attached, failure: nil, handoffMS: 500,
                                           bytesTransferred: 2_000_000, variantIndex: 0, source: .network,
                                           downloadMS: 450, timeWillExpire: false))
    }

    @Test func twelveMegabyteImageUnderFullIsTooLarge() {
        // Refused from the response's Content-Length, before the body: 12,000,000 > 10 MB, at
        // 50 ms overhead + 50 ms latency, nothing transferred (the extension cancels there).
        let outcome = Self.run(Self.photo(original: 12_000_000), FullStrategy())
        #expect(outcome == PipelineOutcome(presentation: .plain, outcome: .tooLarge, failure: .exceedsSizeCap,
                                           handoffMS: 100, bytesTransferred: 0, variantIndex: 0,
                                           source: nil, downloadMS: nil, timeWillExpire: false))
        // A video over its cap that would also run past the deadline is refused as soon.
        let cellular = NetworkProfile(throughputBytesPerSecond: 750_000, latencyMS: 120)
        let huge = [MediaVariant(variant: "original", kind: .video, format: .mp4, bytes: 60_000_000)]
        #expect(Self.run(huge, FullStrategy(), network: cellular) == PipelineOutcome(
            presentation: .plain, outcome: .tooLarge, failure: .exceedsSizeCap, handoffMS: 170, bytesTransferred: 0,
            variantIndex: 0, source: nil, downloadMS: nil, timeWillExpire: false))
    }

    /// What the model records for a refusal from the headers is what the extension records: no
    /// source, no download time. It recorded the variant's size over the latency (11 MB in 120 ms),
    /// which the replay's network estimate took for a completed download at 92 MB/s.
    @Test func aRefusalFromTheHeadersIsNoDownloadForTheNetworkEstimate() {
        let cellular = NetworkProfile(throughputBytesPerSecond: 750_000, latencyMS: 120)
        let downloads = [300_000, 800_000, 2_000_000].map { bytes in
            Self.run(Self.photo(original: bytes), FullStrategy(), network: cellular)
                .deliveredDetails(for: PipelineInput(media: Self.photo(original: bytes), network: cellular, cache: .empty),
                                  network: .cellular, strategy: .full)
        }
        let refusals = [11_000_000, 12_000_000, 11_500_000].map { bytes in
            Self.run(Self.photo(original: bytes), FullStrategy(), network: cellular)
                .deliveredDetails(for: PipelineInput(media: Self.photo(original: bytes), network: cellular, cache: .empty),
                                  network: .cellular, strategy: .full)
        }
        #expect(refusals.allSatisfy { $0.outcome == .tooLarge && $0.attachment.source == nil && $0.attachment.downloadMS == nil })
        #expect(NetworkProfile.estimate(from: downloads + refusals, network: .cellular)
                == NetworkProfile.estimate(from: downloads, network: .cellular))
        let estimate = NetworkProfile.estimate(from: downloads, network: .cellular)
        // Download times are recorded in whole milliseconds: the line comes back to within them.
        #expect(abs(estimate.throughputBytesPerSecond - 750_000) < 750 && abs(estimate.latencyMS - 120) < 2, "\(estimate)")
    }

    @Test func slowDownloadRunsIntoTheDeadline() {
        // Without a download timeout of its own: 2 MB at 50 kB/s needs 40,100 ms; the deadline at
        // 28,000 ms leaves 27,950 ms of download, of which 27,850 ms after the latency: 1,392,500 bytes.
        let slow = NetworkProfile(throughputBytesPerSecond: 50_000, latencyMS: 100)
        let outcome = Self.run(Self.photo(original: 2_000_000), FullStrategy(), network: slow,
                               limits: PipelineLimits(downloadTimeoutMS: nil))
        #expect(outcome == PipelineOutcome(presentation: .plain, outcome: .timeout, failure: .deadlineExpired,
                                           handoffMS: 28_000, bytesTransferred: 1_392_500, variantIndex: 0,
                                           source: .network, downloadMS: 27_950, timeWillExpire: true))
    }

    @Test func theExtensionsOwnTimeoutEndsADownloadAtTwentyFiveSeconds() {
        // 19,000,000 B of video on cellular (750 kB/s after 120 ms) needs 25,453 ms: ready at
        // 25,503 ms, before the deadline, but the extension stops its download at 25,000 ms
        // (at 25,050 ms from launch), 24,880 ms of it after the latency: 18,660,000 bytes.
        let cellular = NetworkProfile(throughputBytesPerSecond: 750_000, latencyMS: 120)
        let video = [MediaVariant(variant: "original", kind: .video, format: .mp4, bytes: 19_000_000)]
        #expect(Self.run(video, FullStrategy(), network: cellular) == PipelineOutcome(
            presentation: .plain, outcome: .timeout, failure: .downloadTimedOut, handoffMS: 25_050,
            bytesTransferred: 18_660_000, variantIndex: 0, source: .network, downloadMS: 25_000, timeWillExpire: false))
    }

    @Test func ownDownloadTimeoutFiresBeforeTheDeadline() {
        let network = NetworkProfile(throughputBytesPerSecond: 100_000, latencyMS: 0)
        let limits = PipelineLimits(downloadTimeoutMS: 10_000)
        let outcome = Self.run(Self.photo(original: 2_000_000), FullStrategy(), network: network, limits: limits)
        #expect(outcome == PipelineOutcome(presentation: .plain, outcome: .timeout, failure: .downloadTimedOut,
                                           handoffMS: 10_050, bytesTransferred: 1_000_000, variantIndex: 0,
                                           source: .network, downloadMS: 10_000, timeWillExpire: false))
        // A timeout later than the deadline leaves the system's expiry in charge.
        let late = Self.run(Self.photo(original: 4_000_000), FullStrategy(), network: network,
                            limits: PipelineLimits(downloadTimeoutMS: 29_000))
        #expect(late.failure == .deadlineExpired)
        #expect(late.timeWillExpire)
    }

    @Test func kindAndFormatMismatchIsUnsupported() {
        // Refused from the response's headers, once the latency has passed.
        let audioAsMP4 = [MediaVariant(variant: "original", kind: .audio, format: .mp4, bytes: 1_000_000)]
        #expect(Self.run(audioAsMP4, FullStrategy()) == PipelineOutcome(
            presentation: .plain, outcome: .unsupportedFormat, failure: .unsupportedFormat, handoffMS: 100,
            bytesTransferred: 0, variantIndex: 0, source: nil, downloadMS: nil, timeWillExpire: false))

        let gifAsJPEG = [MediaVariant(variant: "original", kind: .gif, format: .jpeg, bytes: 500_000)]
        #expect(Self.run(gifAsJPEG, FullStrategy()).outcome == .unsupportedFormat)
        let kindNone = [MediaVariant(variant: "original", kind: .noAttachment, format: .png, bytes: 500_000)]
        #expect(Self.run(kindNone, FullStrategy()).outcome == .unsupportedFormat)
        // MPEG is both a video and an audio format; a GIF file is also an image.
        let mpegAudio = [MediaVariant(variant: "original", kind: .audio, format: .mpeg, bytes: 1_000_000)]
        #expect(Self.run(mpegAudio, FullStrategy()).outcome == .attached)
        let gifImage = [MediaVariant(variant: "original", kind: .image, format: .gif, bytes: 1_000_000)]
        #expect(Self.run(gifImage, FullStrategy()).outcome == .attached)
    }

    @Test func supportedFormatsAreConfigurable() {
        let mov = [MediaVariant(variant: "original", kind: .video, format: .mov, bytes: 1_000_000)]
        #expect(Self.run(mov, FullStrategy()).outcome == .attached)
        let limits = PipelineLimits(supportedFormats: SupportedFormats.apple.removing(.mov, for: .video))
        #expect(Self.run(mov, FullStrategy(), limits: limits).failure == .unsupportedFormat)
        #expect(limits.supportedFormats.supports(.mp4, for: .video))
        #expect(!SupportedFormats.apple.supports(.mp4, for: .audio))
    }

    @Test func sizeCapsPerKind() {
        let audio = [MediaVariant(variant: "original", kind: .audio, format: .mp3, bytes: 5_000_001)]
        #expect(Self.run(audio, FullStrategy()).failure == .exceedsSizeCap)
        let audioAtCap = [MediaVariant(variant: "original", kind: .audio, format: .mp3, bytes: 5_000_000)]
        #expect(Self.run(audioAtCap, FullStrategy()).outcome == .attached)
        let video = [MediaVariant(variant: "original", kind: .video, format: .mp4, bytes: 40_000_000)]
        #expect(Self.run(video, FullStrategy()).outcome == .attached)
        // Between the decimal and the binary 10 MB: the extension refuses it, so does the model.
        #expect(Self.run(Self.photo(original: 10_200_000), FullStrategy()).failure == .exceedsSizeCap)
    }

    @Test func memoryLimitAppliesToImagesOnly() {
        // 5,000,000 B image held twice: 10,000,000 > 8 MiB.
        let limits = PipelineLimits(memoryLimitBytes: 8 * PipelineLimits.mebibyte)
        let outcome = Self.run(Self.photo(original: 5_000_000), FullStrategy(), limits: limits)
        #expect(outcome.outcome == .tooLarge)
        #expect(outcome.failure == .exceedsMemoryLimit)
        #expect(outcome.bytesTransferred == 5_000_000)
        // Video is streamed to disk.
        let video = [MediaVariant(variant: "original", kind: .video, format: .mp4, bytes: 40_000_000)]
        #expect(Self.run(video, FullStrategy(), limits: limits).outcome == .attached)
        // With the defaults no image under the size cap can reach the memory limit.
        #expect(PipelineModel.attachFailure(Self.photo(original: 10_000_000)[0], limits: PipelineLimits()) == nil)
    }

    @Test func offlineDeviceCannotDownload() {
        let outcome = Self.run(Self.photo(original: 500_000), FullStrategy(), network: .typical(for: .offline))
        #expect(outcome == PipelineOutcome(presentation: .plain, outcome: .downloadFailed,
                                           failure: .networkUnavailable, handoffMS: 50, bytesTransferred: 0,
                                           variantIndex: 0, source: .network, downloadMS: nil, timeWillExpire: false))
    }

    @Test func anEmptyDownloadFailsAsTheExtensionsDoes() {
        // The response ends after its latency with no body: the extension keeps no empty file and
        // records `download_failed` (MediaDownload), at 50 ms overhead + 50 ms latency.
        #expect(Self.run(Self.photo(original: 0), FullStrategy()) == PipelineOutcome(
            presentation: .plain, outcome: .downloadFailed, failure: .emptyMedia, handoffMS: 100, bytesTransferred: 0,
            variantIndex: 0, source: .network, downloadMS: 50, timeWillExpire: false))
        // `adaptive` does not choose what cannot be attached: the thumbnail.
        #expect(Self.run(Self.photo(original: 0), AdaptiveStrategy()).variantIndex == 1)
        #expect(PipelineModel.attachFailure(Self.photo(original: 0)[0], limits: Self.limits) == .emptyMedia)
        // A refusal from the headers still comes first.
        let empty = MediaVariant(variant: "original", kind: .image, format: .mp4, bytes: 0)
        #expect(Self.run([empty], FullStrategy()).failure == .unsupportedFormat)
    }

    @Test func noneIsNotRequestedAndPlain() {
        let outcome = Self.run(Self.photo(original: 500_000), NoAttachmentStrategy())
        #expect(outcome == PipelineOutcome(presentation: .plain, outcome: .notRequested, failure: nil, handoffMS: 50,
                                           bytesTransferred: 0, variantIndex: nil, source: nil, downloadMS: nil,
                                           timeWillExpire: false))
        // Every strategy shows a push without media as sent.
        for name in StrategyCatalog.standard.names {
            #expect(Self.run([], StrategyCatalog.standard[name]!).outcome == .notRequested, "\(name)")
        }
    }

    @Test func cachedHitIsAttachedFromTheCache() {
        let media = Self.photo(original: 3_000_000)
        let cache = CacheState(cachedNames: ["original"], in: media, ageSeconds: 3_600)
        let slow = NetworkProfile(throughputBytesPerSecond: 50_000, latencyMS: 100)
        let outcome = Self.run(media, CachedStrategy(), network: slow, cache: cache)
        #expect(outcome == PipelineOutcome(presentation: .rich, outcome: .attached, failure: nil, handoffMS: 52,
                                           bytesTransferred: 0, variantIndex: 0, source: .cache, downloadMS: 2,
                                           timeWillExpire: false))
        // The pipeline looks in the cache whatever the strategy.
        #expect(Self.run(media, FullStrategy(), network: slow, cache: cache).source == .cache)
    }

    @Test func cachedMissFallsBackToTheThumbnail() {
        let media = Self.photo(original: 3_000_000)
        let expired = CacheState(cachedNames: ["original"], in: media, ageSeconds: 86_401)
        let outcome = Self.run(media, CachedStrategy(), cache: expired)
        // 50 + 50 ms latency + 40,000 B at 5 MB/s (8 ms).
        #expect(outcome == PipelineOutcome(presentation: .rich, outcome: .attached, failure: nil, handoffMS: 108,
                                           bytesTransferred: 40_000, variantIndex: 1, source: .network,
                                           downloadMS: 58, timeWillExpire: false))
        #expect(Self.run(media, CachedStrategy()).variantIndex == 1)
        let thumbnailCached = CacheState(cachedNames: ["thumbnail"], in: media, ageSeconds: 0)
        #expect(Self.run(media, CachedStrategy(), cache: thumbnailCached).source == .cache)
        // Only one size offered: it is downloaded.
        let single = [MediaVariant(variant: "original", kind: .image, format: .png, bytes: 800_000)]
        #expect(Self.run(single, CachedStrategy()).variantIndex == 0)
    }

    /// `adaptive` predicts as the extension does, on the network it assumes without knowing the
    /// real one (500 kB/s after 150 ms); the download then runs on the device's network.
    @Test func adaptivePicksByPredictedTimeOnTheAssumedNetwork() {
        // 3 MB: 50 + 2 * (150 + 6,000) = 12,350 ms on the assumed network: the original, on any network.
        let media = Self.photo(original: 3_000_000)
        let slow = NetworkProfile(throughputBytesPerSecond: 50_000, latencyMS: 200)
        #expect(AdaptiveStrategy().choose(PipelineInput(media: media, network: Self.fast), limits: Self.limits) == .variant(0))
        #expect(AdaptiveStrategy().choose(PipelineInput(media: media, network: slow), limits: Self.limits) == .variant(0))
        // 8 MB: 50 + 2 * (150 + 16,000) = 32,350 ms > 28,000: the thumbnail, even on a fast network
        // (where the original would have been ready in 1.7 s: the extension cannot know that).
        let large = Self.photo(original: 8_000_000)
        #expect(Self.run(large, AdaptiveStrategy()) == PipelineOutcome(
            presentation: .rich, outcome: .attached, failure: nil, handoffMS: 108, bytesTransferred: 40_000,
            variantIndex: 1, source: .network, downloadMS: 58, timeWillExpire: false))
        // 6.5 MB: 2 * (150 + 13,000) = 26,300 ms of download, ready by the deadline but past the
        // extension's 25 s download limit: the thumbnail. With factor 1 the original.
        #expect(Self.run(Self.photo(original: 6_500_000), AdaptiveStrategy()).variantIndex == 1)
        #expect(Self.run(Self.photo(original: 6_500_000), AdaptiveStrategy(safetyFactor: 1)).variantIndex == 0)
        // A thumbnail too large for the assumed network too: nothing.
        let heavy = Self.photo(original: 9_000_000, thumbnail: 7_000_000)
        #expect(Self.run(heavy, AdaptiveStrategy()).outcome == .notRequested)
        // An original the system would refuse is skipped.
        #expect(Self.run(Self.photo(original: 12_000_000), AdaptiveStrategy()).variantIndex == 1)
        // A cached original costs nothing to get.
        let cache = CacheState(cachedNames: ["original"], in: large, ageSeconds: 10)
        #expect(Self.run(large, AdaptiveStrategy(), network: slow, cache: cache).variantIndex == 0)
    }

    @Test func posterReplacesVideoOnly() {
        let video = [
            MediaVariant(variant: "original", kind: .video, format: .mp4, bytes: 20_000_000, durationMS: 15_000),
            MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: 30_000),
            MediaVariant(variant: "poster", kind: .image, format: .jpeg, bytes: 250_000),
        ]
        #expect(Self.run(video, PosterStrategy()).variantIndex == 2)
        #expect(Self.run(video, FullStrategy()).variantIndex == 0)
        #expect(Self.run(Self.photo(original: 1_000_000), PosterStrategy()).variantIndex == 0)
        let noPoster = Array(video.prefix(2))
        #expect(Self.run(noPoster, PosterStrategy()).variantIndex == 0)
    }

    @Test func thumbnailStrategy() {
        #expect(Self.run(Self.photo(original: 1_000_000), ThumbnailStrategy()).variantIndex == 1)
        let single = [MediaVariant(variant: "original", kind: .image, format: .png, bytes: 800_000)]
        #expect(Self.run(single, ThumbnailStrategy()).variantIndex == 0)
    }

    @Test func rolesFromNamesAndSizes() {
        func v(_ name: String, _ kind: AttachmentKind, _ bytes: Int) -> MediaVariant {
            MediaVariant(variant: name, kind: kind, format: kind == .video ? .mp4 : .jpeg, bytes: bytes)
        }
        #expect(MediaRoles([]) == MediaRoles(original: nil, thumbnail: nil, poster: nil))
        #expect(MediaRoles([v("thumbnail", .image, 10), v("original", .image, 900)])
                == MediaRoles(original: 1, thumbnail: 0, poster: nil))
        // Unnamed sizes: the largest is the original, the smallest the thumbnail.
        #expect(MediaRoles([v("medium", .image, 500), v("large", .image, 900), v("small", .image, 100)])
                == MediaRoles(original: 1, thumbnail: 2, poster: nil))
        // A video's first other image is its poster, unless it is the thumbnail.
        #expect(MediaRoles([v("clip", .video, 9_000), v("still", .image, 300), v("thumbnail", .image, 20)])
                == MediaRoles(original: 0, thumbnail: 2, poster: 1))
        #expect(MediaRoles([v("clip", .video, 9_000), v("small", .image, 20)])
                == MediaRoles(original: 0, thumbnail: 1, poster: nil))
        // Only a thumbnail offered: it is also the original.
        #expect(MediaRoles([v("thumbnail", .image, 20)]) == MediaRoles(original: 0, thumbnail: 0, poster: nil))
    }

    @Test func handoffNeverPassesTheDeadline() {
        var generator = SplitMix64(seed: 11)
        let catalog = StrategyCatalog.standard
        for _ in 0..<5_000 {
            let original = Int.random(in: 1_000...60_000_000, using: &generator)
            let media = Self.photo(original: original, thumbnail: max(1, original / 50))
            let network = NetworkProfile(throughputBytesPerSecond: Double.random(in: 0...10_000_000, using: &generator),
                                         latencyMS: Double.random(in: 0...2_000, using: &generator))
            let cache = Bool.random(using: &generator)
                ? CacheState(variants: VariantSet([0]), ageSeconds: Int.random(in: 0...200_000, using: &generator))
                : .empty
            let input = PipelineInput(media: media, network: network, cache: cache)
            for name in catalog.names {
                let outcome = PipelineModel.run(input, strategy: catalog[name]!, limits: Self.limits)
                #expect(outcome.handoffMS <= Self.limits.deadlineMS)
                #expect((outcome.presentation == .rich) == (outcome.outcome == .attached))
                #expect(outcome.timeWillExpire == (outcome.failure == .deadlineExpired))
                #expect(outcome.bytesTransferred >= 0 && outcome.bytesTransferred <= original)
                #expect(outcome.failure.map(\.outcome) ?? outcome.outcome == outcome.outcome)
            }
        }
    }

    @Test func deliveredDetailsDescribeTheAttempt() {
        let media = Self.photo(original: 2_000_000)
        let input = PipelineInput(media: media, network: Self.fast)
        let attached = PipelineModel.run(input, strategy: FullStrategy(), limits: Self.limits)
        #expect(attached.deliveredDetails(for: input, network: .wifi, strategy: .full) == DeliveredDetails(
            attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 2_000_000, source: .network,
                                            downloadMS: 450, variant: "original"),
            outcome: .attached, processingMS: 500, timeWillExpire: false, network: .wifi, strategy: .full))

        let slow = PipelineInput(media: media, network: NetworkProfile(throughputBytesPerSecond: 50_000, latencyMS: 100))
        let timedOut = PipelineModel.run(slow, strategy: FullStrategy(), limits: Self.limits)
        #expect(timedOut.deliveredDetails(for: slow, network: .cellular, strategy: .full) == DeliveredDetails(
            attachment: DeliveredAttachment(kind: .noAttachment, format: .jpeg, bytes: 2_000_000, source: .network,
                                            downloadMS: 25_000, variant: "original"),
            outcome: .timeout, processingMS: 25_050, timeWillExpire: false, network: .cellular, strategy: .full))

        let none = PipelineModel.run(input, strategy: NoAttachmentStrategy(), limits: Self.limits)
        #expect(none.deliveredDetails(for: input, network: nil, strategy: .noAttachment) == DeliveredDetails(
            attachment: DeliveredAttachment(kind: .noAttachment), outcome: .notRequested, processingMS: 50,
            timeWillExpire: false, network: nil, strategy: .noAttachment))
    }
}
