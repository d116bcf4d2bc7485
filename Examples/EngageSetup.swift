// Shared by the app and both extensions (add this file to all three targets).
// Not built by SwiftPM: Examples/ is outside every target directory.
#if canImport(UserNotifications)
import EngageClient
import Foundation
import os

enum EngageSetup {
    /// The app group every target of the app is a member of (Signing & Capabilities > App Groups).
    static let appGroup = "group.com.example.photos"
    static let endpoint = URL(string: "https://engage.example.com")!
    /// An `ingest` key (`engage keys create --app photos --role ingest`). It can only add events,
    /// so shipping it inside the app is acceptable; never ship a `read` or `admin` key.
    static let ingestKey = "egk_REPLACE_ME"
    static let log = Logger(subsystem: "com.example.photos", category: "engage")

    /// One client per process, created on first use. Nil without the app group, or while the
    /// container's files cannot be read (a push before the first unlock after a restart); the
    /// next use then tries again, since iOS keeps an extension's process for later pushes and a
    /// client cached as nil would record none of them.
    static var client: EngageClient? {
        made.withLock { client in
            if client == nil { client = makeClient() }
            return client
        }
    }

    private static let made = OSAllocatedUnfairLock<EngageClient?>(initialState: nil)

    private static func makeClient() -> EngageClient? {
        guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: appGroup) else { return nil }
        do {
            // Created once, atomically, in the group container: the app and its extensions agree.
            let deviceID = try InstallationID.readOrCreate(in: container)
            let configuration = EngageClient.Configuration(endpoint: endpoint, ingestKey: ingestKey,
                                                           containerDirectory: container, deviceID: deviceID)
            return try EngageClient(configuration: configuration) { dropped in
                log.error("engage.dropped reason=\(String(describing: dropped.reason), privacy: .public) event.count=\(dropped.eventIDs.count)")
            }
        } catch {
            log.error("engage.unavailable error=\(String(describing: error), privacy: .public)")
            return nil
        }
    }

    /// Records through the client, logging a failure (the queue drops the oldest events to make
    /// room on a full disk; an error here means even that did not help).
    static func record(_ body: (EngageClient) throws -> Void) {
        guard let client else { return }
        do {
            try body(client)
        } catch {
            log.error("engage.record_failed error=\(String(describing: error), privacy: .public)")
        }
    }
}
#endif
