#if canImport(UserNotifications) && !os(tvOS)
import EngageClient
import Foundation
@preconcurrency import UserNotifications

/// The Notification Service Extension, ready to subclass: name it as the extension's principal
/// class and provide `engageClient`. It only translates between UserNotifications and
/// `NotificationServiceSession`, where every decision is made.
///
///     final class NotificationService: EngageNotificationServiceExtension {
///         override var engageClient: EngageClient? { EngageSetup.client }
///     }
open class EngageNotificationServiceExtension: UNNotificationServiceExtension {
    // Guards `session`: iOS calls the two entry points on different threads.
    private let lock = NSLock()
    private var session: NotificationServiceSession<UNNotificationContent>?

    /// The client of this process (create it once, for example in a `static let`); nil records
    /// nothing and still attaches the media.
    open var engageClient: EngageClient? { nil }

    /// Time limits, size limits and the default strategy (`ServiceExtensionPolicy.media` chooses
    /// the variant a strategy downloads).
    open var engagePolicy: ServiceExtensionPolicy { ServiceExtensionPolicy() }

    /// The app's last changes to the rich content, once its attachment is ready (a title, a
    /// category). Runs on a background thread; keep it short.
    open func prepareRichContent(_ content: UNMutableNotificationContent) {}

    override open func didReceive(_ request: UNNotificationRequest,
                                  withContentHandler contentHandler: @Sendable @escaping (UNNotificationContent) -> Void) {
        // Before `engageClient`, whose first use makes the client: the time limit counts from here.
        let receivedAt = ContinuousClock.now
        let payload = PushPayload(userInfo: request.content.userInfo)
        let session = NotificationServiceSession<UNNotificationContent>(
            client: engageClient, notificationID: payload.notificationID(requestIdentifier: request.identifier),
            category: PushPayload.category(userInfo: request.content.userInfo, shown: request.content.categoryIdentifier),
            payload: payload, policy: engagePolicy,
            downloadDirectory: FileManager.default.temporaryDirectory, original: request.content,
            attach: { media, content in
                let attachment = try UNNotificationAttachment(
                    identifier: media.variant, url: media.file, options: [UNNotificationAttachmentOptionsTypeHintKey: media.type.uti])
                // Content without the attachment is not `attached`: throwing records it as not
                // attached (`unsupported_format`, as when iOS refuses the file).
                guard let rich = content.mutableCopy() as? UNMutableNotificationContent else { throw ContentNotMutable() }
                rich.attachments = [attachment]
                return rich
            },
            finishing: { [weak self] content in
                guard let self, let rich = content.mutableCopy() as? UNMutableNotificationContent else { return content }
                prepareRichContent(rich)
                return rich
            },
            deliver: contentHandler, receivedAt: receivedAt)
        lock.withLock { self.session = session }
        session.start()
    }

    override open func serviceExtensionTimeWillExpire() {
        lock.withLock { session }?.expire()
    }
}

/// The content iOS gave could not be copied for the attachment.
private struct ContentNotMutable: Error {}
#endif
