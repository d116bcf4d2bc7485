import Foundation

/// One v1 event, as the client records it. The identity (`eventID`) and time (`occurredAt`) are
/// fixed when the event is created and travel unchanged through every retry.
public struct EngageEvent: Sendable, Hashable {
    public enum Body: Sendable, Hashable {
        case sent(media: [MediaVariant], strategy: AttachmentStrategy?, payloadBytes: Int?)
        case delivered(attachment: AttachmentTelemetry, outcome: DeliveryOutcome, processingMS: Int,
                       timeWillExpire: Bool, network: NetworkType?, strategy: AttachmentStrategy?)
        case displayed(presentation: Presentation, attachmentKind: AttachmentKind)
        case expanded
        /// Only the length of a text input travels; there is no field for the text.
        case action(actionID: String, textInputLength: Int?)

        /// What besides notification and type tells two such events apart: the action id.
        var onceDetail: String? {
            if case let .action(actionID, _) = self { return actionID }
            return nil
        }

        public var type: String {
            switch self {
            case .sent: "sent"
            case .delivered: "delivered"
            case .displayed: "displayed"
            case .expanded: "expanded"
            case .action: "action"
            }
        }
    }

    public var eventID: UUID
    public var notificationID: String
    public var deviceID: String
    public var category: String
    public var occurredAt: Date
    public var experiment: ExperimentArm?
    public var properties: [String: JSONValue]?
    public var body: Body

    /// Without `eventID`, the event gets a new time-ordered id (`UUID.timeOrdered(at: occurredAt)`).
    public init(eventID: UUID? = nil, notificationID: String, deviceID: String, category: String,
                occurredAt: Date = Date(), experiment: ExperimentArm? = nil,
                properties: [String: JSONValue]? = nil, body: Body) {
        self.eventID = eventID ?? .timeOrdered(at: occurredAt)
        self.notificationID = notificationID
        self.deviceID = deviceID
        self.category = category
        self.occurredAt = occurredAt
        self.experiment = experiment
        self.properties = properties
        self.body = body
    }

    /// The name-based id (UUID version 5) of the one event of `type` that a device reports
    /// about a notification, and for actions about one action id. Whoever records that event,
    /// wherever (the app's `willPresent`, a sweep of delivered notifications, a Content Extension
    /// and the app it forwards an action to), makes the same id, so the server stores it once.
    /// The name is the lines `engage-event-v1`, the device id, the notification id, the type and,
    /// for actions, the action id, joined with line feeds (which no id may contain) and hashed
    /// in `UUID.engageEventNamespace`: any platform can compute it.
    ///
    /// With a `queueName` (`Configuration.queueName`) the name begins with the lines
    /// `engage-queue-event-v1` and the queue's name instead: apps of one App Group share the
    /// installation id, and the same notification id sent to two of them would otherwise give
    /// both apps' events one id, which the server stores for the first app only and refuses to
    /// the second as another app's id.
    public static func onceID(deviceID: String, notificationID: String, type: String, detail: String? = nil,
                              queueName: String? = nil) -> UUID {
        var name = queueName.map { "engage-queue-event-v1\n\($0)" } ?? "engage-event-v1"
        name += "\n\(deviceID)\n\(notificationID)\n\(type)"
        if let detail { name += "\n" + detail }
        return .nameBased(name, namespace: .engageEventNamespace)
    }

    /// An event with its `onceID`.
    public static func once(notificationID: String, deviceID: String, category: String, occurredAt: Date = Date(),
                            experiment: ExperimentArm? = nil, properties: [String: JSONValue]? = nil,
                            queueName: String? = nil, body: Body) -> EngageEvent {
        EngageEvent(eventID: onceID(deviceID: deviceID, notificationID: notificationID, type: body.type,
                                    detail: body.onceDetail, queueName: queueName),
                    notificationID: notificationID, deviceID: deviceID, category: category, occurredAt: occurredAt,
                    experiment: experiment, properties: properties, body: body)
    }

    /// Whether the event carries its `onceID`, with or without the queue's name (then the queue
    /// skips a repeat).
    func isRecordedOnce(queueName: String?) -> Bool {
        func id(_ queueName: String?) -> UUID {
            Self.onceID(deviceID: deviceID, notificationID: notificationID, type: body.type, detail: body.onceDetail,
                        queueName: queueName)
        }
        return eventID == id(nil) || (queueName != nil && eventID == id(queueName))
    }

    /// The v1 wire form: one compact JSON object, common fields first, in the order of
    /// docs/events.md. Optional fields that are `nil` are left out.
    public var json: String {
        JSONWriter.object { object in
            object.string("event_id", eventID.uuidString.lowercased())
            object.string("type", body.type)
            object.string("notification_id", notificationID)
            object.string("device_id", deviceID)
            object.string("category", category)
            object.string("occurred_at", Timestamp.rfc3339(occurredAt))
            object.raw("experiment", experiment.map { arm in
                JSONWriter.object {
                    $0.string("id", arm.id)
                    $0.string("arm", arm.arm)
                    $0.number("probability", arm.probability)
                }
            })
            switch body {
            case let .sent(media, strategy, payloadBytes):
                object.raw("media", "[" + media.map(Self.json(of:)).joined(separator: ",") + "]")
                object.string("strategy", strategy?.rawValue)
                object.integer("payload_bytes", payloadBytes)
            case let .delivered(attachment, outcome, processingMS, timeWillExpire, network, strategy):
                object.raw("attachment", JSONWriter.object {
                    $0.string("kind", attachment.kind.rawValue)
                    $0.string("format", attachment.format?.rawValue)
                    $0.integer("bytes", attachment.bytes)
                    $0.string("source", attachment.source?.rawValue)
                    $0.integer("download_ms", attachment.downloadMS)
                    $0.string("variant", attachment.variant)
                    // The server takes a status of 100 to 599 and refuses the event with any
                    // other; a media server may answer anything.
                    $0.integer("http_status", attachment.httpStatus.flatMap { (100...599).contains($0) ? $0 : nil })
                })
                object.string("outcome", outcome.rawValue)
                object.integer("processing_ms", processingMS)
                object.bool("time_will_expire", timeWillExpire)
                object.string("network", network?.rawValue)
                object.string("strategy", strategy?.rawValue)
            case let .displayed(presentation, attachmentKind):
                object.string("presentation", presentation.rawValue)
                object.string("attachment_kind", attachmentKind.rawValue)
            case .expanded:
                break
            case let .action(actionID, textInputLength):
                object.string("action_id", actionID)
                object.integer("text_input_length", textInputLength)
            }
            object.value("properties", properties.map { .object($0) })
        }
    }

    private static func json(of variant: MediaVariant) -> String {
        JSONWriter.object {
            $0.string("variant", variant.variant)
            $0.string("kind", variant.kind.rawValue)
            $0.string("format", variant.format.rawValue)
            $0.integer("bytes", variant.bytes)
            $0.integer("width", variant.width)
            $0.integer("height", variant.height)
            $0.integer("duration_ms", variant.durationMS)
        }
    }
}
