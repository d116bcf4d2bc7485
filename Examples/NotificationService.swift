// The Notification Service Extension: the library does the work (download under a deadline from
// the time left, size limits, type detection and hint, the `delivered` event on disk before the
// content handler, sending afterwards, the best attempt in serviceExtensionTimeWillExpire).
// Not built by SwiftPM: Examples/ is outside every target directory.
//
// Set this class as NSExtensionPrincipalClass of the extension's Info.plist. The payload it
// expects is described in docs/client.md ("The push payload").
#if canImport(UserNotifications)
import EngageClient
import EngageNotificationService
import UserNotifications

final class NotificationService: EngageNotificationServiceExtension {
    override var engageClient: EngageClient? { EngageSetup.client }

    /// Optional: what the extension may spend, and the strategy for pushes that name none.
    override var engagePolicy: ServiceExtensionPolicy {
        ServiceExtensionPolicy(maxDownload: .seconds(20), defaultStrategy: .full)
    }

    /// Optional: last changes to the rich content once its attachment is ready.
    override func prepareRichContent(_ content: UNMutableNotificationContent) {
        content.subtitle = "Long-press to see the photo"
    }
}
#endif
