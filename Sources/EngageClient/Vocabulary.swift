/// The closed vocabularies of the v1 event schema (docs/events.md, "Vocabularies"). Raw values
/// are the exact wire strings; the server rejects anything else.

public enum AttachmentKind: String, Sendable, CaseIterable {
    case image, gif, video, audio, none
}

public enum MediaFormat: String, Sendable, CaseIterable {
    case jpeg, png, gif, tiff, mpeg, mp4, mov, mp3, aac, wav, caf, aiff, avi, m4a
}

public enum MediaSource: String, Sendable, CaseIterable {
    /// Downloaded for this push.
    case network
    /// Already on the device.
    case cache
}

/// How the Notification Service Extension ended.
public enum DeliveryOutcome: String, Sendable, CaseIterable {
    case attached
    /// `serviceExtensionTimeWillExpire()` came first.
    case timeout
    case tooLarge = "too_large"
    case unsupportedFormat = "unsupported_format"
    case downloadFailed = "download_failed"
    /// The push asked for no media.
    case notRequested = "not_requested"
}

public enum Presentation: String, Sendable, CaseIterable {
    case rich, plain
}

public enum AttachmentStrategy: String, Sendable, CaseIterable {
    case none, full, thumbnail, cached, adaptive, poster
}

public enum NetworkType: String, Sendable, CaseIterable {
    case wifi, cellular, ethernet, offline, unknown
}

/// The experiment arm that produced a notification.
public struct ExperimentArm: Sendable, Hashable {
    public var id: String
    public var arm: String
    /// How likely this arm was to be chosen (0 < p <= 1), when known.
    public var probability: Double?

    public init(id: String, arm: String, probability: Double? = nil) {
        self.id = id
        self.arm = arm
        self.probability = probability
    }
}

/// One rendition a push offered (a `sent` event's `media`).
public struct MediaVariant: Sendable, Hashable {
    public var variant: String
    public var kind: AttachmentKind
    public var format: MediaFormat
    public var bytes: Int
    public var width: Int?
    public var height: Int?
    public var durationMS: Int?

    public init(variant: String, kind: AttachmentKind, format: MediaFormat, bytes: Int,
                width: Int? = nil, height: Int? = nil, durationMS: Int? = nil) {
        self.variant = variant
        self.kind = kind
        self.format = format
        self.bytes = bytes
        self.width = width
        self.height = height
        self.durationMS = durationMS
    }
}

/// What the Notification Service Extension attached (a `delivered` event's `attachment`).
public struct AttachmentTelemetry: Sendable, Hashable {
    public var kind: AttachmentKind
    public var format: MediaFormat?
    public var bytes: Int?
    public var source: MediaSource?
    public var downloadMS: Int?
    /// Which offered variant was used.
    public var variant: String?
    /// The media server's HTTP status when it was not a success (with `download_failed`).
    public var httpStatus: Int?

    public init(kind: AttachmentKind, format: MediaFormat? = nil, bytes: Int? = nil,
                source: MediaSource? = nil, downloadMS: Int? = nil, variant: String? = nil, httpStatus: Int? = nil) {
        self.kind = kind
        self.format = format
        self.bytes = bytes
        self.source = source
        self.downloadMS = downloadMS
        self.variant = variant
        self.httpStatus = httpStatus
    }

    /// Nothing attached.
    public static let none = AttachmentTelemetry(kind: .none)
}

/// The action identifiers iOS itself reports in a `UNNotificationResponse`.
public enum AppleActionIdentifier {
    /// The user tapped the notification and the app opened (`UNNotificationDefaultActionIdentifier`).
    public static let open = "com.apple.UNNotificationDefaultActionIdentifier"
    /// The user dismissed the notification (`UNNotificationDismissActionIdentifier`; only for
    /// categories with `.customDismissAction`).
    public static let dismiss = "com.apple.UNNotificationDismissActionIdentifier"
}
