// A Notification Service Extension reporting `delivered` through EngageClient, after the shape of
// Apple's classic sample: download the media within the time iOS gives, attach it, and fall back
// to the plain content in `serviceExtensionTimeWillExpire()`.
// Not built by SwiftPM: Examples/ is outside every target directory.
//
// The payload this example expects (besides `aps` with `mutable-content: 1` and a `category`):
//   "notification_id": "9E3B6F1A-...",                       (the apns-id is a good choice)
//   "media": {"original": "https://.../full.jpg", "thumbnail": "https://.../small.jpg"}
#if canImport(UserNotifications)
import EngageClient
import Foundation
import UniformTypeIdentifiers
import UserNotifications

final class NotificationService: UNNotificationServiceExtension {
    /// Everything the two entry points share; iOS calls them on different threads.
    private let lock = NSLock()
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private var original: UNNotificationContent?
    private var download: URLSessionDownloadTask?
    private var received = Date()
    private var finished = false
    private var notificationID = ""
    private var strategy: AttachmentStrategy = .full
    private var experiment: ExperimentArm?

    override func didReceive(_ request: UNNotificationRequest,
                             withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        let userInfo = request.content.userInfo
        // The arm comes from the cache: no network round trip before the download starts.
        let assignment = EngageSetup.client?.cachedAssignments().first
        lock.withLock {
            self.contentHandler = contentHandler
            original = request.content
            received = Date()
            notificationID = userInfo["notification_id"] as? String ?? request.identifier
            strategy = assignment?.attachmentStrategy ?? .full
            experiment = assignment?.experimentArm
        }

        let media = userInfo["media"] as? [String: String] ?? [:]
        let variant = strategy == .thumbnail ? "thumbnail" : "original"
        guard strategy != .none, let address = media[variant] ?? media["original"], let url = URL(string: address) else {
            finish(content: request.content, attachment: .none, outcome: .notRequested, timeWillExpire: false)
            return
        }

        let started = Date()
        let task = URLSession.shared.downloadTask(with: url) { [weak self] location, response, _ in
            guard let self else { return }
            let downloadMS = Int(Date().timeIntervalSince(started) * 1000)
            guard let location, let (attachment, telemetry) = Self.attachment(from: location, response: response,
                                                                             variant: variant, downloadMS: downloadMS)
            else {
                self.finish(content: request.content, attachment: .none, outcome: .downloadFailed, timeWillExpire: false)
                return
            }
            let rich = request.content.mutableCopy() as! UNMutableNotificationContent
            rich.attachments = [attachment]
            self.finish(content: rich, attachment: telemetry, outcome: .attached, timeWillExpire: false)
        }
        lock.withLock { download = task }
        task.resume()
    }

    /// iOS is about to stop the extension (about 30 seconds in): deliver the plain content now.
    override func serviceExtensionTimeWillExpire() {
        let (task, content) = lock.withLock { (download, original) }
        task?.cancel()
        if let content {
            finish(content: content, attachment: .none, outcome: .timeout, timeWillExpire: true)
        }
    }

    /// Reports once, then hands the content to iOS. The event is on disk before the handler runs,
    /// so it survives the process ending right after; a short flush sends it now when it can.
    private func finish(content: UNNotificationContent, attachment: AttachmentTelemetry,
                        outcome: DeliveryOutcome, timeWillExpire: Bool) {
        let state: (handler: ((UNNotificationContent) -> Void)?, elapsed: TimeInterval, id: String,
                    strategy: AttachmentStrategy, experiment: ExperimentArm?)? = lock.withLock {
            guard !finished else { return nil }
            finished = true
            let handler = contentHandler
            contentHandler = nil
            return (handler, Date().timeIntervalSince(received), notificationID, strategy, experiment)
        }
        guard let state, let handler = state.handler else { return }
        guard let client = EngageSetup.client else {
            handler(content)
            return
        }
        _ = try? client.recordDelivered(
            notificationID: state.id, category: content.categoryIdentifier, attachment: attachment,
            outcome: outcome, processingMS: Int(state.elapsed * 1000), timeWillExpire: timeWillExpire,
            network: nil, strategy: state.strategy, experiment: state.experiment)
        if timeWillExpire {
            // No time left to send: the app, or the next push's extension, will.
            handler(content)
            return
        }
        // Spend at most the configured budget (2 s), and never past iOS's limit.
        let budget = min(client.configuration.sendBudget, .milliseconds(Int(max(0, 28 - state.elapsed) * 1000)))
        Task {
            await client.flush(budget: budget)
            handler(content)
        }
    }

    /// Moves the download to a file whose extension tells iOS its type, and describes it.
    private static func attachment(from location: URL, response: URLResponse?, variant: String,
                                   downloadMS: Int) -> (UNNotificationAttachment, AttachmentTelemetry)? {
        let mime = response?.mimeType ?? "image/jpeg"
        guard let type = UTType(mimeType: mime), let fileExtension = type.preferredFilenameExtension else { return nil }
        let (kind, format): (AttachmentKind, MediaFormat?) = switch mime {
        case "image/jpeg": (.image, .jpeg)
        case "image/png": (.image, .png)
        case "image/gif": (.gif, .gif)
        case "video/mp4": (.video, .mp4)
        case "video/quicktime": (.video, .mov)
        case "audio/mpeg": (.audio, .mp3)
        default: (type.conforms(to: .image) ? .image : .none, nil)
        }
        guard kind != .none else { return nil }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString + "." + fileExtension)
        guard (try? FileManager.default.moveItem(at: location, to: file)) != nil,
              let attachment = try? UNNotificationAttachment(identifier: variant, url: file)
        else { return nil }
        let bytes = (try? file.resourceValues(forKeys: [.fileSizeKey]))?.fileSize
        return (attachment, AttachmentTelemetry(kind: kind, format: format, bytes: bytes, source: .network,
                                                downloadMS: downloadMS, variant: variant))
    }
}
#endif
