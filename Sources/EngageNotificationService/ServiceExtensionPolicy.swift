import EngageClient
import Foundation

/// The rules the Notification Service Extension follows: how long it may spend, how big a file
/// may be, which variant it downloads for a strategy. Plain values, so every decision is tested
/// without UserNotifications.
public struct ServiceExtensionPolicy: Sendable, Equatable {
    /// How long iOS lets the extension run before `serviceExtensionTimeWillExpire()` (about 30
    /// seconds; Apple does not promise a number).
    public var timeLimit: Duration
    /// Kept free before `timeLimit` for attaching, recording and calling the content handler.
    public var reserve: Duration
    /// The longest download, however much time is left.
    public var maxDownload: Duration
    /// The largest file per kind. Apple's limits (image 10 MB, audio 5 MB, video 50 MB), in
    /// decimal megabytes, the stricter reading.
    public var sizeLimits: [AttachmentKind: Int]
    /// What to apply when the payload names no strategy (or one this client does not know).
    public var defaultStrategy: AttachmentStrategy
    /// The longest best-effort send after the content handler was called.
    public var sendBudget: Duration

    public init(timeLimit: Duration = .seconds(30), reserve: Duration = .seconds(2), maxDownload: Duration = .seconds(25),
                sizeLimits: [AttachmentKind: Int] = ServiceExtensionPolicy.appleSizeLimits,
                defaultStrategy: AttachmentStrategy = .full, sendBudget: Duration = .seconds(2)) {
        self.timeLimit = timeLimit
        self.reserve = reserve
        self.maxDownload = maxDownload
        self.sizeLimits = sizeLimits
        self.defaultStrategy = defaultStrategy
        self.sendBudget = sendBudget
    }

    public static let appleSizeLimits: [AttachmentKind: Int] = [.image: 10_000_000, .gif: 10_000_000,
                                                                 .audio: 5_000_000, .video: 50_000_000]

    /// The limit for a kind; before the kind is known, the largest of all.
    public func sizeLimit(for kind: AttachmentKind?) -> Int {
        guard let kind else { return sizeLimits.values.max() ?? 0 }
        return sizeLimits[kind] ?? 0
    }

    /// How long the download may take, counted from when it starts, `elapsed` after the push
    /// arrived: what is left of the time limit after the reserve, at most `maxDownload`; zero
    /// when nothing is left.
    public func downloadTimeout(elapsed: Duration) -> Duration {
        max(.zero, min(maxDownload, timeLimit - reserve - elapsed))
    }

    /// The budget of the send after the handler, `elapsed` after the push arrived.
    public func sendBudget(elapsed: Duration) -> Duration {
        max(.zero, min(sendBudget, timeLimit - reserve - elapsed))
    }

    /// The strategy to apply: the payload's when this client knows it, else the default.
    public func strategy(for payload: PushPayload) -> AttachmentStrategy {
        payload.attachmentStrategy ?? defaultStrategy
    }

    /// What `adaptive` assumes of a network it knows nothing about, as the server's model does
    /// for an unknown network (`NetworkProfile.typical(for: .unknown)`): 500 kB/s after 150 ms.
    public static let assumedThroughputBytesPerSecond = 500_000.0
    public static let assumedLatency = Duration.milliseconds(150)
    /// `adaptive` takes a rendition only if it would still be ready in time were getting it
    /// this many times slower than predicted (the model's `AdaptiveStrategy.safetyFactor`).
    public static let adaptiveSafetyFactor = 2.0

    /// Reading a kept file instead of downloading it, as the model charges it (`cacheReadMS`).
    public static let cacheRead = Duration.milliseconds(2)

    /// The offered media to attach under the strategy, `elapsed` after the push arrived, with
    /// the files at `cached` URLs kept (`MediaCache`), as the server's model chooses
    /// (`StrategyCatalog.standard`; a test pins the two together), so that events say which
    /// strategy ran and the model credits it with what it did (`OfferedMediaRoles` reads the
    /// parts):
    /// - `none`: nothing; `full`: the original; `thumbnail`: the thumbnail, else the original.
    /// - `cached`: the original if kept, else the thumbnail if kept, else the thumbnail, else
    ///   the original.
    /// - `adaptive`: the original when it is predicted to be ready in time
    ///   (`adaptivePredictsInTime`), else the thumbnail when it is, else nothing.
    /// - `poster`: for a video (or an original of no stated kind), its poster; anything else (or
    ///   a video without one) the original.
    /// Nil when the strategy or the push offers nothing. A kept file is read, not downloaded,
    /// whichever strategy chose it.
    public func media(for payload: PushPayload, strategy: AttachmentStrategy,
                      elapsed: Duration = .zero, cached: Set<URL> = []) -> PushPayload.Media? {
        let media = payload.media
        let roles = OfferedMediaRoles(media)
        func isCached(_ index: Int?) -> Int? { index.flatMap { cached.contains(media[$0].url) ? $0 : nil } }
        let chosen: Int? = switch strategy {
        case .none: nil
        case .full: roles.original
        case .thumbnail: roles.thumbnail ?? roles.original
        case .cached: isCached(roles.original) ?? isCached(roles.thumbnail) ?? roles.thumbnail ?? roles.original
        case .adaptive: [roles.original, roles.thumbnail].lazy.compactMap { $0 }
            .first { adaptivePredictsInTime(media[$0], elapsed: elapsed, cached: cached.contains(media[$0].url)) }
        // A push that states no kind for its original but offers a poster is taken to be a video.
        case .poster: roles.original.flatMap { [.video, nil].contains(media[$0].kind) ? roles.poster : nil } ?? roles.original
        }
        return chosen.map { media[$0] }
    }

    /// Whether `adaptive` predicts the rendition attached: not empty, within its kind's size
    /// limit, and ready before the time limit's reserve, and a download within `maxDownload`, even if getting
    /// it takes `adaptiveSafetyFactor` times the predicted time: reading it when `cached`, else
    /// downloading it on an unknown network, as the strategy replay's model predicts it. A
    /// rendition whose size the push does not give is assumed to fit (the model always knows it,
    /// from `sent`).
    public func adaptivePredictsInTime(_ media: PushPayload.Media, elapsed: Duration, cached: Bool = false) -> Bool {
        guard let bytes = media.bytes else { return true }
        // An empty rendition cannot be attached (`MediaDownload` fails an empty body).
        guard bytes > 0, bytes <= sizeLimit(for: media.kind) else { return false }
        let fetch = cached ? Self.cacheRead : Self.assumedLatency + .seconds(Double(bytes) / Self.assumedThroughputBytesPerSecond)
        let pessimistic = fetch * Self.adaptiveSafetyFactor
        return elapsed + pessimistic <= timeLimit - reserve && (cached || pessimistic <= maxDownload)
    }
}
