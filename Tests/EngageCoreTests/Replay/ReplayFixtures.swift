@testable import EngageCore

/// Hand-made event streams for strategy replays, in the order a reader delivers them.
struct ReplayLog {
    static let start = Timestamp(rfc3339: "2026-11-01T00:00:00Z")!

    private(set) var events: [Event] = []
    private var serial: UInt64 = 0

    /// A photo offer whose variants keep their identity (same sizes and dimensions) wherever reused.
    static func photo(original: Int, thumbnail: Int? = 40_000) -> [MediaVariant] {
        var media = [MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: original, width: 1920, height: 1080)]
        if let thumbnail {
            media.append(MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: thumbnail, width: 320, height: 180))
        }
        return media
    }

    /// What a device records after downloading `bytes` in `downloadMS` and attaching it.
    static func attached(_ bytes: Int, downloadMS: Int, variant: String = "original", source: MediaSource = .network,
                         strategy: AttachmentStrategy? = .full) -> DeliveredDetails {
        DeliveredDetails(attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: bytes, source: source,
                                                         downloadMS: downloadMS, variant: variant),
                         outcome: .attached, processingMS: downloadMS + 50, timeWillExpire: false,
                         network: .wifi, strategy: strategy)
    }

    static func plain(_ outcome: DeliveryOutcome, bytes: Int? = nil, processingMS: Int = 50,
                      strategy: AttachmentStrategy? = .full) -> DeliveredDetails {
        DeliveredDetails(attachment: DeliveredAttachment(kind: .noAttachment, format: bytes == nil ? nil : .jpeg, bytes: bytes,
                                                         source: bytes == nil ? nil : .network, variant: bytes == nil ? nil : "original"),
                         outcome: outcome, processingMS: processingMS, timeWillExpire: outcome == .timeout,
                         network: .wifi, strategy: strategy)
    }

    mutating func add(_ notification: String, device: String = "device-1", category: String = "photo",
                      at seconds: Double, tag: ExperimentTag? = nil, _ details: EventDetails) {
        serial += 1
        events.append(Event(eventID: EventID(high: 0x4000_0000_0000_0000 | serial, low: 0x8000_0000_0000_0000 | serial),
                            notificationID: notification, deviceID: device, category: category,
                            occurredAt: ReplayLog.start.adding(microseconds: Int64(seconds * 1_000_000)),
                            experiment: tag, details: details))
    }

    /// `sent` then, a second later, `delivered`.
    mutating func push(_ notification: String, device: String = "device-1", category: String = "photo",
                       at seconds: Double, media: [MediaVariant], strategy: AttachmentStrategy? = .full,
                       tag: ExperimentTag? = nil, delivered: DeliveredDetails) {
        add(notification, device: device, category: category, at: seconds, tag: tag,
            .sent(SentDetails(media: media, strategy: strategy)))
        add(notification, device: device, category: category, at: seconds + 1, tag: tag, .delivered(delivered))
    }

    func replay(_ strategy: any AttachmentStrategyModel, settings: StrategyReplaySettings = StrategyReplaySettings())
        -> StrategyReplayResult {
        var replay = StrategyReplay(strategy: strategy, settings: settings)
        for event in events { replay.feed(event) }
        return replay.finish()
    }
}
