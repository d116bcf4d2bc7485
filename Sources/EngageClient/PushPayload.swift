import Foundation

/// What engage needs from a push, under the payload's `engage` key: which notification it is,
/// the experiment arm and attachment strategy it was sent under, and the media it offers.
///
///     {"aps": {"alert": {...}, "mutable-content": 1, "category": "new_photo"},
///      "engage": {"notification_id": "9e3b6f1a-...",
///                 "experiment": "thumbnail-vs-full", "arm": "thumbnail", "strategy": "thumbnail",
///                 "probability": 0.5,
///                 "media": [{"variant": "original", "url": "https://cdn.example.com/p/1.jpg"},
///                           {"variant": "thumbnail", "url": "https://cdn.example.com/p/1-small.jpg"}]}}
///
/// `experiment`, `arm`, `strategy` and `probability` are the members of the server's
/// assignment entry (`GET`/`POST /v1/assignments`), copied unchanged by the sender, which
/// records the same in its `sent` event. The extension and the app take the arm from here and
/// never from anything cached on the device, so every event of a notification carries the arm
/// it was sent under.
public struct PushPayload: Sendable, Equatable {
    public static let key = "engage"

    /// One rendition of the notification's media.
    public struct Media: Sendable, Equatable {
        /// `original`, `thumbnail`, `poster`, ...
        public var variant: String
        public var url: URL
        /// What the sender knows about the file, when it says so.
        public var kind: AttachmentKind?
        /// A whole number the server takes (`WireInteger`); any other value in a payload is not
        /// carried.
        public var bytes: Int?

        public init(variant: String, url: URL, kind: AttachmentKind? = nil, bytes: Int? = nil) {
            self.variant = variant
            self.url = url
            self.kind = kind
            self.bytes = bytes
        }
    }

    /// The same for every event of the push; when absent, the request's identifier (iOS sets it
    /// to the `apns-id`).
    public var notificationID: String?
    /// The arm the push was sent under, when it was sent in an experiment.
    public var experiment: ExperimentArm?
    /// The attachment strategy to apply, as the sender spelled it.
    public var strategy: String?
    public var media: [Media]

    public init(notificationID: String? = nil, experiment: ExperimentArm? = nil, strategy: String? = nil, media: [Media] = []) {
        self.notificationID = notificationID
        self.experiment = experiment
        self.strategy = strategy
        self.media = media
    }

    /// The sender's side: the payload fragment for a device's assignment (nil when the device is
    /// in no experiment; `strategy` then says what to apply).
    public init(notificationID: String, assignment: Assignment?, strategy: AttachmentStrategy? = nil, media: [Media]) {
        self.init(notificationID: notificationID, experiment: assignment?.experimentArm,
                  strategy: assignment?.strategy ?? strategy?.rawValue, media: media)
    }

    /// The category a notification's events are counted under: the one the push was sent with
    /// (`aps.category`), which a Notification Service Extension changing the content's category
    /// does not touch, so that every event of the notification, the extension's `delivered` and
    /// the app's `displayed` or action alike, names the same one. A push sent without one is
    /// counted under `uncategorized`, whatever category an extension gives its content (the
    /// extension saw none, the app would see the one it gave). `shown` (the content's category)
    /// for a local notification (no `aps`), and `uncategorized` when that is empty too: the
    /// server takes no event without a category. So is a category the server refuses (over 100
    /// bytes, control characters): every event of the notification would be refused with it.
    public static func category(userInfo: [AnyHashable: Any], shown: String) -> String {
        let category: String?
        if let aps = userInfo["aps"] as? [String: Any] {
            category = aps["category"] as? String
        } else {
            category = shown
        }
        guard let category, WireText.isAcceptable(category, maxBytes: 100) else { return uncategorized }
        return category
    }

    /// The category of a notification sent or shown without one.
    public static let uncategorized = "uncategorized"

    /// Reads the `engage` member of a notification's `userInfo`; members it does not know or
    /// cannot read are ignored, so a newer sender cannot break an older app. So are names the
    /// server would refuse in an event (`WireText`), which would take the events of the
    /// notification down with them: a notification id (the request's identifier stands in), an
    /// experiment or arm (the events count outside the experiment; the sender's `sent` event
    /// with them was refused too), a media variant (that entry is left out). A media URL must be
    /// `https` or `http`: a `file` URL would attach whatever the extension can read.
    public init(userInfo: [AnyHashable: Any]) {
        let object = userInfo[Self.key] as? [String: Any] ?? [:]
        func name(_ key: String, maxBytes: Int) -> String? {
            (object[key] as? String).flatMap { WireText.isAcceptable($0, maxBytes: maxBytes) ? $0 : nil }
        }
        notificationID = name("notification_id", maxBytes: 200)
        if let id = name("experiment", maxBytes: 100), let arm = name("arm", maxBytes: 100) {
            experiment = ExperimentArm(id: id, arm: arm, probability: FoundationNumber.probability(object["probability"]))
        }
        strategy = object["strategy"] as? String
        media = (object["media"] as? [Any] ?? []).compactMap { entry in
            guard let entry = entry as? [String: Any], let variant = entry["variant"] as? String,
                  WireText.isAcceptable(variant, maxBytes: 100),
                  let address = entry["url"] as? String, let url = URL(string: address),
                  let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http"
            else { return nil }
            return Media(variant: variant, url: url, kind: (entry["kind"] as? String).flatMap(AttachmentKind.init(rawValue:)),
                         bytes: FoundationNumber.whole(entry["bytes"], atMost: WireInteger.maximum))
        }
    }

    /// The id every event of the notification carries: the payload's `notification_id`, else the
    /// request's identifier (a push's `apns-id`). An identifier the server would refuse (a local
    /// notification's, which the app chose: too long, or with control characters) would take
    /// every event of the notification down with it; a name-based UUID of it stands in, the same
    /// in the extension and in the app, which both derive it here.
    public func notificationID(requestIdentifier: String) -> String {
        if let notificationID { return notificationID }
        if WireText.isAcceptable(requestIdentifier, maxBytes: 200) { return requestIdentifier }
        return UUID.nameBased("request-identifier:" + requestIdentifier, namespace: .engageEventNamespace).uuidString.lowercased()
    }

    /// The strategy when it is one this client knows.
    public var attachmentStrategy: AttachmentStrategy? { strategy.flatMap(AttachmentStrategy.init(rawValue:)) }

    /// The `engage` member as JSON text, for a sender to put into its APNs payload.
    public var json: String {
        JSONWriter.object { object in
            object.string("notification_id", notificationID)
            object.string("experiment", experiment?.id)
            object.string("arm", experiment?.arm)
            object.string("strategy", strategy)
            object.number("probability", experiment?.probability)
            object.raw("media", "[" + media.map { item in
                JSONWriter.object {
                    $0.string("variant", item.variant)
                    $0.string("url", item.url.absoluteString)
                    $0.string("kind", item.kind?.rawValue)
                    $0.integer("bytes", item.bytes)
                }
            }.joined(separator: ",") + "]")
        }
    }
}
