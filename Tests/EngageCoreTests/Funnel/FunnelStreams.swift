@testable import EngageCore

/// Hand-written events of one notification, `apns-7C2E`.
enum FunnelStreams {
    /// 2026-11-29T19:16:23Z.
    static let start = Timestamp(rfc3339: "2026-11-29T19:16:23Z")!
    static let day = UTCDay(year: 2026, month: 11, day: 29)!
    static let thumbs = ExperimentTag(id: "thumbs-v1", arm: "thumbnail", probability: 0.5)

    static func id(_ n: UInt64) -> EventID { EventID(high: 0x0f8f_ad5b_d9cb_469f, low: n) }

    /// `seconds` after `start`.
    static func at(_ seconds: Int64) -> Timestamp {
        start.adding(microseconds: seconds * Timestamp.microsecondsPerSecond)
    }

    static func event(_ n: UInt64, at seconds: Int64, _ details: EventDetails,
                      experiment: ExperimentTag? = thumbs, category: String = "new_photo") -> Event {
        Event(eventID: id(n), notificationID: "apns-7C2E", deviceID: "dev-42", category: category,
              occurredAt: at(seconds), experiment: experiment, details: details)
    }

    static let original = MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 2_400_000,
                                       width: 4032, height: 3024)
    static let thumbnail = MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: 48_000,
                                        width: 400, height: 300)

    static func sent(_ n: UInt64, at seconds: Int64) -> Event {
        event(n, at: seconds, .sent(SentDetails(media: [original, thumbnail], strategy: .thumbnail, payloadBytes: 2890)))
    }

    /// A thumbnail downloaded over Wi-Fi and attached.
    static func deliveredImage(_ n: UInt64, at seconds: Int64, source: MediaSource = .network,
                               downloadMS: Int = 840) -> Event {
        event(n, at: seconds, .delivered(DeliveredDetails(
            attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 48_000, source: source,
                                            downloadMS: downloadMS, variant: "thumbnail"),
            outcome: .attached, processingMS: 910, timeWillExpire: false, network: .wifi, strategy: .thumbnail)))
    }

    static func displayed(_ n: UInt64, at seconds: Int64, _ presentation: Presentation = .rich,
                          _ kind: AttachmentKind = .image) -> Event {
        event(n, at: seconds, .displayed(DisplayedDetails(presentation: presentation, attachmentKind: kind)))
    }

    static func expanded(_ n: UInt64, at seconds: Int64) -> Event {
        event(n, at: seconds, .expanded)
    }

    static func action(_ n: UInt64, at seconds: Int64, _ actionID: String, textInputLength: Int? = nil) -> Event {
        event(n, at: seconds, .action(ActionDetails(actionID: actionID, textInputLength: textInputLength)))
    }
}
