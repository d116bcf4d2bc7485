// Shared by the app and both extensions (add this file to all three targets).
// Not built by SwiftPM: Examples/ is outside every target directory.
#if canImport(UserNotifications)
import EngageClient
import Foundation

enum EngageSetup {
    /// The app group every target of the app is a member of (Signing & Capabilities > App Groups).
    static let appGroup = "group.com.example.photos"
    static let endpoint = URL(string: "https://engage.example.com")!
    /// An `ingest` key (`engage keys create --app photos --role ingest`). It can only add events,
    /// so shipping it inside the app is acceptable; never ship a `read` or `admin` key.
    static let ingestKey = "egk_REPLACE_ME"

    /// One client per process, created on first use.
    static let client: EngageClient? = {
        guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: appGroup),
              let defaults = UserDefaults(suiteName: appGroup)
        else { return nil }
        // A pseudonymous installation id, kept in the group's defaults so the app and its
        // extensions report the same device. Never the APNs device token.
        let deviceID: String
        if let existing = defaults.string(forKey: "engage.device_id") {
            deviceID = existing
        } else {
            deviceID = UUID().uuidString.lowercased()
            defaults.set(deviceID, forKey: "engage.device_id")
        }
        let configuration = EngageClient.Configuration(
            endpoint: endpoint, ingestKey: ingestKey, containerDirectory: container, deviceID: deviceID,
            batchSize: 50, flushInterval: .seconds(10), maxQueueBytes: 5 * 1024 * 1024, sendBudget: .seconds(2))
        return try? EngageClient(configuration: configuration) { dropped in
            NSLog("engage.dropped reason=%@ event.count=%d", "\(dropped.reason)", dropped.eventIDs.count)
        }
    }()
}
#endif
