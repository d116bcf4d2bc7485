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

    /// The variants to try for a strategy, best first. `none` asks for no media, `thumbnail`
    /// and `poster` for their small renditions (the original when the push offers none),
    /// the others for the original.
    public func preferredVariants(for strategy: AttachmentStrategy) -> [String] {
        switch strategy {
        case .none: []
        case .thumbnail: ["thumbnail", "original"]
        case .poster: ["poster", "thumbnail", "original"]
        case .full, .cached, .adaptive: ["original"]
        }
    }

    /// The offered media to download for the strategy; nil when the strategy wants none or the
    /// push offers nothing. A push with media but none of the preferred variants gets its first.
    public func media(for payload: PushPayload, strategy: AttachmentStrategy) -> PushPayload.Media? {
        guard strategy != .none, !payload.media.isEmpty else { return nil }
        for variant in preferredVariants(for: strategy) {
            if let match = payload.media.first(where: { $0.variant == variant }) { return match }
        }
        return payload.media.first
    }
}
