// The app's side: displays (in the foreground, and a sweep of Notification Center for those shown
// while the app was not running), responses, and sending while the app is active.
// Not built by SwiftPM: Examples/ is outside every target directory.
#if canImport(UserNotifications) && canImport(UIKit)
import EngageClient
import EngageNotificationService
import SwiftUI
import UserNotifications

final class AppDelegate: NSObject, UIApplicationDelegate, UNUserNotificationCenterDelegate {
    func application(_ application: UIApplication,
                     didFinishLaunchingWithOptions options: [UIApplication.LaunchOptionsKey: Any]? = nil) -> Bool {
        UNUserNotificationCenter.current().delegate = self
        return true
    }

    /// Shown while the app is in the foreground.
    func userNotificationCenter(_ center: UNUserNotificationCenter, willPresent notification: UNNotification,
                                withCompletionHandler completion: @escaping (UNNotificationPresentationOptions) -> Void) {
        let options: UNNotificationPresentationOptions = [.banner, .list, .sound]
        // Recorded only when shown (a banner or the list; the deprecated .alert shows it too): an
        // app that completes with [] (a chat already open), or with only a sound or a badge,
        // shows nothing and records nothing.
        if !options.isDisjoint(with: [.banner, .list, .alert]) { EngageSetup.record { try $0.recordWillPresent(notification) } }
        completion(options)
    }

    /// Taps (`AppleActionIdentifier.open`), dismissals (with `.customDismissAction`) and the
    /// actions the Content Extension forwards; each counts once wherever it was recorded first.
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
                                withCompletionHandler completion: @escaping () -> Void) {
        EngageSetup.record { try $0.recordResponse(response) }
        completion()
    }
}

@main
struct PhotosApp: App {
    @UIApplicationDelegateAdaptor(AppDelegate.self) private var delegate
    @Environment(\.scenePhase) private var scenePhase

    var body: some Scene {
        WindowGroup {
            ContentView()
                // Restarted whenever the phase changes, cancelled when it leaves `.active`.
                .task(id: scenePhase) {
                    guard scenePhase == .active, let client = EngageSetup.client else { return }
                    if let failure = await client.recordDeliveredNotifications() {
                        EngageSetup.log.error("engage.sweep_failed error=\(String(describing: failure), privacy: .public)")
                    }
                    await client.run()
                }
        }
    }
}

struct ContentView: View {
    var body: some View { Text("Photos") }
}
#endif
