import EngageClient
import Foundation

/// What engage reads from a notification iOS delivered (`UNNotification`), as plain values, so
/// that what the app records about it is decided, and tested, without UserNotifications.
public struct NotificationFacts: Sendable, Equatable {
    /// `UNNotificationRequest.identifier` (the `apns-id` for a push).
    public var requestIdentifier: String
    /// When iOS delivered it (`UNNotification.date`).
    public var date: Date
    public var category: String
    public var payload: PushPayload
    /// The types (UTIs) of its attachments as iOS holds them (`UNNotificationAttachment.type`).
    public var attachmentTypes: [String]

    public init(requestIdentifier: String, date: Date, category: String, payload: PushPayload, attachmentTypes: [String]) {
        self.requestIdentifier = requestIdentifier
        self.date = date
        self.category = category
        self.payload = payload
        self.attachmentTypes = attachmentTypes
    }

    /// The payload's `notification_id`, else the request's identifier (or its stand-in): what
    /// the extension used (`PushPayload.notificationID(requestIdentifier:)`).
    public var notificationID: String { payload.notificationID(requestIdentifier: requestIdentifier) }

    /// Rich when iOS holds an attachment for it.
    public var presentation: Presentation { attachmentTypes.isEmpty ? .plain : .rich }

    /// The kind of what was shown: the first attachment's (an image when its type is one this
    /// library does not know), `none` without attachment.
    public var attachmentKind: AttachmentKind {
        guard let first = attachmentTypes.first else { return .none }
        return MediaTypeDetector.kind(ofUTI: first) ?? .image
    }
}

extension EngageClient {
    /// The notification was shown: from `willPresent` (now), or found by a sweep (at its date,
    /// or now if that lies ahead).
    /// Once per notification, whoever records it first. A time given goes as given. A
    /// notification's date was read when it arrived, and the clock may have been set since: a
    /// date later than now (the clock ran ahead then and was put right since) is no display
    /// time, and would be refused as in the future, so the display is recorded now, the
    /// earliest time the clock can vouch for.
    @discardableResult
    public func recordDisplayed(_ notification: NotificationFacts, at time: Date? = nil) throws -> UUID {
        try recordDisplayed(notificationID: notification.notificationID, category: notification.category,
                            presentation: notification.presentation, attachmentKind: notification.attachmentKind,
                            experiment: notification.payload.experiment, occurredAt: time ?? min(notification.date, now()))
    }

    /// Shown now, in the foreground (`willPresent`): the client reads its clock itself, so a
    /// clock set before the event is sent moves the event with it (`RecordingClock`).
    @discardableResult
    public func recordDisplayedNow(_ notification: NotificationFacts) throws -> UUID {
        try recordDisplayed(notificationID: notification.notificationID, category: notification.category,
                            presentation: notification.presentation, attachmentKind: notification.attachmentKind,
                            experiment: notification.payload.experiment)
    }

    /// Records the display of every notification still in Notification Center, so displays
    /// that happened while the app was not running are counted; those recorded before (by
    /// `willPresent` or an earlier sweep) are not queued again. Returns the first failure to
    /// record, if any; the others are still tried.
    @discardableResult
    public func recordDisplays(of delivered: [NotificationFacts]) -> QueueError? {
        var failure: QueueError?
        for notification in delivered.sorted(by: { $0.date < $1.date }) {
            do {
                try recordDisplayed(notification)
            } catch {
                failure = failure ?? (error as? QueueError)
            }
        }
        return failure
    }

    /// The Notification Content Extension showed its view; the notification was shown too
    /// (`recordShown`).
    @discardableResult
    public func recordExpanded(_ notification: NotificationFacts) throws -> UUID {
        recordShown(notification)
        return try recordExpanded(notificationID: notification.notificationID, category: notification.category,
                                  experiment: notification.payload.experiment)
    }

    /// The user's response: recorded once per notification and action, wherever it is seen
    /// (a Content Extension, then the app it forwards the action to); the notification was
    /// shown too (`recordShown`).
    @discardableResult
    public func recordAction(_ notification: NotificationFacts, actionID: String, textInputLength: Int? = nil) throws -> UUID {
        recordShown(notification)
        return try recordAction(notificationID: notification.notificationID, category: notification.category, actionID: actionID,
                                textInputLength: textInputLength, experiment: notification.payload.experiment)
    }

    /// A notification the user expanded or answered was shown, though no display may have been
    /// recorded: one shown while the app was not running and then tapped (or dismissed, or
    /// answered from its expanded view) leaves Notification Center before the next sweep could
    /// find it, and without its display the notifications users engage with most would count
    /// as never displayed, outside every rate. Its display is recorded at its date (or now, if
    /// that lies ahead: `recordDisplayed(_:at:)`), once per notification like every display
    /// (nothing when `willPresent` or a sweep recorded it).
    /// Best effort: a queue that cannot take the display fails the response's own record too.
    private func recordShown(_ notification: NotificationFacts) {
        _ = try? recordDisplayed(notification)
    }
}
