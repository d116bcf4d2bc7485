#if canImport(UserNotifications) && !os(tvOS)
import EngageClient
import Foundation
@preconcurrency import UserNotifications

extension NotificationFacts {
    public init(_ notification: UNNotification) {
        let content = notification.request.content
        self.init(requestIdentifier: notification.request.identifier, date: notification.date,
                  category: PushPayload.category(userInfo: content.userInfo, shown: content.categoryIdentifier),
                  payload: PushPayload(userInfo: content.userInfo),
                  attachmentTypes: content.attachments.map(\.type))
    }
}

extension EngageClient {
    /// In the app's `userNotificationCenter(_:willPresent:withCompletionHandler:)`: shown now,
    /// in the foreground.
    @discardableResult
    public func recordWillPresent(_ notification: UNNotification) throws -> UUID {
        try recordDisplayedNow(NotificationFacts(notification))
    }

    /// When the app becomes active: the displays of every notification still in Notification
    /// Center, those shown while the app was not running included.
    @discardableResult
    public func recordDeliveredNotifications(in center: UNUserNotificationCenter = .current()) async -> QueueError? {
        let delivered = await center.deliveredNotifications()
        return recordDisplays(of: delivered.map(NotificationFacts.init))
    }

    /// In the app's `userNotificationCenter(_:didReceive:withCompletionHandler:)` and in a
    /// Content Extension's `didReceive(_:completionHandler:)`: the same response recorded in both
    /// counts once. Only the length of a text input's text is recorded.
    @discardableResult
    public func recordResponse(_ response: UNNotificationResponse) throws -> UUID {
        let length = (response as? UNTextInputNotificationResponse)?.userText.count
        return try recordAction(NotificationFacts(response.notification), actionID: response.actionIdentifier,
                                textInputLength: length)
    }

    /// In a Content Extension's `didReceive(_:)`: its view appeared.
    @discardableResult
    public func recordExpanded(_ notification: UNNotification) throws -> UUID {
        try recordExpanded(NotificationFacts(notification))
    }
}
#endif
