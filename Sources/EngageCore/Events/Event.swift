/// One validated v1 event: what a device reported about one notification.
public struct Event: Sendable, Equatable {
    public var eventID: EventID
    public var notificationID: String
    public var deviceID: String
    public var category: String
    public var occurredAt: Timestamp
    public var experiment: ExperimentTag?
    public var details: EventDetails
    /// The raw JSON text of the `properties` object, verbatim as received (already validated).
    public var properties: [UInt8]?

    public init(eventID: EventID, notificationID: String, deviceID: String, category: String,
                occurredAt: Timestamp, experiment: ExperimentTag? = nil, details: EventDetails,
                properties: [UInt8]? = nil) {
        self.eventID = eventID
        self.notificationID = notificationID
        self.deviceID = deviceID
        self.category = category
        self.occurredAt = occurredAt
        self.experiment = experiment
        self.details = details
        self.properties = properties
    }

    /// Derived from `details`, so the two cannot disagree.
    public var type: EventType { details.type }
}

/// Which experiment arm produced the notification.
public struct ExperimentTag: Sendable, Equatable {
    public var id: String
    public var arm: String
    /// The assignment probability of `arm`, in (0, 1], when the client knows it.
    public var probability: Double?

    public init(id: String, arm: String, probability: Double? = nil) {
        self.id = id
        self.arm = arm
        self.probability = probability
    }
}

public enum EventDetails: Sendable, Equatable {
    case sent(SentDetails)
    case delivered(DeliveredDetails)
    case displayed(DisplayedDetails)
    case expanded
    case action(ActionDetails)

    public var type: EventType {
        switch self {
        case .sent: .sent
        case .delivered: .delivered
        case .displayed: .displayed
        case .expanded: .expanded
        case .action: .action
        }
    }
}

/// The server sent the notification, with the media variants it offered.
public struct SentDetails: Sendable, Equatable {
    public var media: [MediaVariant]
    public var strategy: AttachmentStrategy?
    public var payloadBytes: Int?

    public init(media: [MediaVariant], strategy: AttachmentStrategy? = nil, payloadBytes: Int? = nil) {
        self.media = media
        self.strategy = strategy
        self.payloadBytes = payloadBytes
    }
}

public struct MediaVariant: Sendable, Hashable {
    /// e.g. "original", "thumbnail", "poster".
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

/// The notification service extension ran on the device.
public struct DeliveredDetails: Sendable, Equatable {
    public var attachment: DeliveredAttachment
    public var outcome: DeliveryOutcome
    public var processingMS: Int
    public var timeWillExpire: Bool
    public var network: NetworkType?
    public var strategy: AttachmentStrategy?

    public init(attachment: DeliveredAttachment, outcome: DeliveryOutcome, processingMS: Int,
                timeWillExpire: Bool, network: NetworkType? = nil, strategy: AttachmentStrategy? = nil) {
        self.attachment = attachment
        self.outcome = outcome
        self.processingMS = processingMS
        self.timeWillExpire = timeWillExpire
        self.network = network
        self.strategy = strategy
    }
}

public struct DeliveredAttachment: Sendable, Equatable {
    public var kind: AttachmentKind
    public var format: MediaFormat?
    public var bytes: Int?
    public var source: MediaSource?
    public var downloadMS: Int?
    public var variant: String?
    /// The media server's HTTP status when the download failed with one (100 to 599).
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
}

/// The notification was shown.
public struct DisplayedDetails: Sendable, Equatable {
    public var presentation: Presentation
    public var attachmentKind: AttachmentKind

    public init(presentation: Presentation, attachmentKind: AttachmentKind) {
        self.presentation = presentation
        self.attachmentKind = attachmentKind
    }
}

/// The user acted on the notification. The text a user typed is never accepted, only its length.
public struct ActionDetails: Sendable, Equatable {
    public static let openIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
    public static let dismissIdentifier = "com.apple.UNNotificationDismissActionIdentifier"

    public var actionID: String
    public var textInputLength: Int?

    public init(actionID: String, textInputLength: Int? = nil) {
        self.actionID = actionID
        self.textInputLength = textInputLength
    }

    /// The user tapped the notification itself.
    public var isOpen: Bool { actionID == ActionDetails.openIdentifier }
    /// The user dismissed the notification.
    public var isDismiss: Bool { actionID == ActionDetails.dismissIdentifier }
    /// An app-defined action button.
    public var isCustom: Bool { !isOpen && !isDismiss }
}
