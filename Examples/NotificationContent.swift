// A Notification Content Extension reporting `expanded` when its view appears and the category's
// actions: `like`, and `reply` (a UNTextInputNotificationAction) of which only the length is sent.
// Not built by SwiftPM: Examples/ is outside every target directory.
//
// The category, registered by the app:
//   let like = UNNotificationAction(identifier: "like", title: "Like")
//   let reply = UNTextInputNotificationAction(identifier: "reply", title: "Reply",
//                                             textInputButtonTitle: "Send", textInputPlaceholder: "Message")
//   UNNotificationCategory(identifier: "new_photo", actions: [like, reply], intentIdentifiers: [],
//                          options: [.customDismissAction])
#if canImport(UserNotifications) && canImport(UIKit)
import EngageClient
import UIKit
import UserNotifications
import UserNotificationsUI

final class NotificationViewController: UIViewController, UNNotificationContentExtension {
    private let imageView = UIImageView()

    override func viewDidLoad() {
        super.viewDidLoad()
        imageView.contentMode = .scaleAspectFill
        imageView.clipsToBounds = true
        imageView.frame = view.bounds
        imageView.autoresizingMask = [.flexibleWidth, .flexibleHeight]
        view.addSubview(imageView)
    }

    /// The user long-pressed the notification and this view appeared.
    func didReceive(_ notification: UNNotification) {
        let content = notification.request.content
        if let attachment = content.attachments.first, attachment.url.startAccessingSecurityScopedResource() {
            defer { attachment.url.stopAccessingSecurityScopedResource() }
            if let data = try? Data(contentsOf: attachment.url) { imageView.image = UIImage(data: data) }
        }
        guard let client = EngageSetup.client else { return }
        _ = try? client.recordExpanded(notificationID: Self.notificationID(of: notification),
                                       category: content.categoryIdentifier,
                                       experiment: client.cachedAssignments().first?.experimentArm)
    }

    func didReceive(_ response: UNNotificationResponse,
                    completionHandler completion: @escaping (UNNotificationContentExtensionResponseOption) -> Void) {
        let notification = response.notification
        let category = notification.request.content.categoryIdentifier
        let id = Self.notificationID(of: notification)
        let client = EngageSetup.client
        let arm = client?.cachedAssignments().first?.experimentArm
        switch response.actionIdentifier {
        case "like":
            _ = try? client?.recordAction(notificationID: id, category: category, actionID: "like", experiment: arm)
            completion(.dismiss)
        case "reply":
            // Only the length leaves the device; the text goes to the app's own backend, if anywhere.
            let length = (response as? UNTextInputNotificationResponse)?.userText.count ?? 0
            _ = try? client?.recordAction(notificationID: id, category: category, actionID: "reply",
                                          textInputLength: length, experiment: arm)
            completion(.dismiss)
        default:
            // Taps and dismissals reach the app's UNUserNotificationCenterDelegate, which records
            // them with AppleActionIdentifier.open / .dismiss.
            completion(.dismissAndForwardAction)
        }
        // Send now if it can be done quickly; otherwise the events wait on disk for the app.
        if let client {
            Task { await client.flush(budget: .seconds(1)) }
        }
    }

    private static func notificationID(of notification: UNNotification) -> String {
        notification.request.content.userInfo["notification_id"] as? String ?? notification.request.identifier
    }
}
#endif
