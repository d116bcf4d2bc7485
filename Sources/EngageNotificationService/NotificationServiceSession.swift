import EngageClient
import Foundation

/// One run of a Notification Service Extension, in plain Swift: the `UNNotificationServiceExtension`
/// subclass (`EngageNotificationServiceExtension`) only translates to and from UserNotifications,
/// so everything decided here is tested on Linux with any `Content` type.
///
/// It applies the payload's strategy (never a cached assignment), downloads the chosen variant
/// under a deadline taken from the time left, attaches it, and calls `deliver` exactly once: with
/// the rich content when the attachment is ready, with the original content otherwise, on its own
/// or from `expire()`. The `delivered` event is on disk before `deliver` runs; sending starts
/// only afterwards, so the network never delays the notification.
public final class NotificationServiceSession<Content>: @unchecked Sendable {
    /// What the session did, for logs, tests and measurements.
    public struct Report: Sendable {
        public var outcome: DeliveryOutcome
        public var attachment: AttachmentTelemetry
        public var timeWillExpire: Bool
        public var strategy: AttachmentStrategy
        public var experiment: ExperimentArm?
        public var processingMS: Int
        /// The `delivered` event's id; nil when it could not be recorded (no client, or the
        /// queue failed: `recordError`).
        public var eventID: UUID?
        public var recordError: QueueError?
        /// When the download's last byte was on disk, and when `deliver` returned.
        public var downloadFinishedAt: ContinuousClock.Instant?
        public var deliveredAt: ContinuousClock.Instant
    }

    private enum Phase {
        case idle
        case downloading(MediaDownload)
        /// Attached; the app's `finishing` step runs. `expire()` delivers this content.
        case ready(Content, AttachmentTelemetry, ContinuousClock.Instant)
        case finished
    }

    // `phase` and `sendTask` are guarded by `lock`: `start()`, the download's completion and
    // `expire()` run on different threads.
    private let lock = NSLock()
    private var phase = Phase.idle
    private var sendTask: Task<Void, Never>?

    private let client: EngageClient?
    private let notificationID: String
    private let category: String
    private let payload: PushPayload
    private let policy: ServiceExtensionPolicy
    private let downloadDirectory: URL
    private let cache: MediaCache?
    private let now: @Sendable () -> Date
    private let original: Content
    private let attach: (DownloadedMedia, Content) throws -> Content
    private let finishing: (Content) -> Content
    private let deliver: (Content) -> Void
    private let onReport: ((Report) -> Void)?
    private let clock = ContinuousClock()
    private let received: ContinuousClock.Instant
    private let strategy: AttachmentStrategy

    /// - Parameters:
    ///   - attach: makes the rich content from the downloaded file (on iOS, a
    ///     `UNNotificationAttachment` with the type hint); throwing means iOS refused the file.
    ///   - finishing: the app's last changes to the rich content, after the attachment is ready.
    ///   - deliver: the content handler; called exactly once.
    ///   - receivedAt: when the push reached the extension (`didReceive` began); the budgets and
    ///     `processing_ms` count from it, including the time taken to make the client.
    ///   - cache: where attached files are kept for the next push that offers them; nil for the
    ///     client's container's (`MediaCache`), and none without a client.
    public init(client: EngageClient?, notificationID: String, category: String, payload: PushPayload,
                policy: ServiceExtensionPolicy, downloadDirectory: URL, original: Content,
                attach: @escaping (DownloadedMedia, Content) throws -> Content,
                finishing: @escaping (Content) -> Content = { $0 },
                deliver: @escaping (Content) -> Void,
                onReport: ((Report) -> Void)? = nil, receivedAt: ContinuousClock.Instant? = nil,
                cache: MediaCache? = nil) {
        self.cache = cache ?? client.map {
            MediaCache(container: $0.configuration.containerDirectory, protection: $0.configuration.fileProtection)
        }
        let wallClock: @Sendable () -> Date = { Date() }
        now = client?.now ?? wallClock
        self.client = client
        self.notificationID = notificationID
        self.category = category
        self.payload = payload
        self.policy = policy
        self.downloadDirectory = downloadDirectory
        self.original = original
        self.attach = attach
        self.finishing = finishing
        self.deliver = deliver
        self.onReport = onReport
        received = receivedAt ?? clock.now
        strategy = policy.strategy(for: payload)
    }

    /// Chooses the media and attaches a kept copy of it or starts its download, or delivers the
    /// original content at once when the strategy or the push asks for none.
    public func start() {
        // A kept file counts when its size is the one the push states: a URL may be reused for
        // new content (the model, too, knows a file by its size, not its address).
        var kept = cache?.entries(for: payload.media.map(\.url), now: now()) ?? [:]
        for media in payload.media where media.bytes.map({ $0 != kept[media.url]?.bytes }) ?? false {
            kept[media.url] = nil
        }
        var chosen = policy.media(for: payload, strategy: strategy, elapsed: clock.now - received, cached: Set(kept.keys))
        // A kept file another process removed since: chosen again as if never kept.
        while let media = chosen, let entry = kept[media.url] {
            if attachKept(entry, media: media) { return }
            kept[media.url] = nil
            chosen = policy.media(for: payload, strategy: strategy, elapsed: clock.now - received, cached: Set(kept.keys))
        }
        guard let media = chosen else {
            finish(original, outcome: .notRequested, attachment: .none, timeWillExpire: false)
            return
        }
        let download = MediaDownload(url: media.url, variant: media.variant, policy: policy, directory: downloadDirectory,
                                     timeout: policy.downloadTimeout(elapsed: clock.now - received)) { [self] result in
            downloadFinished(result, media: media)
        }
        let begin: Bool = lock.withLock {
            guard case .idle = phase else { return false }
            phase = .downloading(download)
            return true
        }
        if begin { download.start() }
    }

    /// iOS is about to end the extension: delivers the best attempt now, the attachment when it
    /// is ready and the original content otherwise, and stops any send still running.
    public func expire() {
        // What to deliver is decided and claimed in one step: a download turning ready in
        // between would otherwise lose to the plain content it just replaced.
        let (claimed, task): (Phase, Task<Void, Never>?) = lock.withLock {
            defer { phase = .finished }
            return (phase, sendTask)
        }
        task?.cancel()
        switch claimed {
        case let .ready(rich, telemetry, downloadFinishedAt):
            recordAndDeliver(rich, outcome: .attached, attachment: telemetry, timeWillExpire: true,
                             downloadFinishedAt: downloadFinishedAt)
        case let .downloading(download):
            recordAndDeliver(original, outcome: .timeout, attachment: AttachmentTelemetry(kind: .none, variant: download.variant),
                             timeWillExpire: true)
            download.cancel()
        case .idle:
            recordAndDeliver(original, outcome: .timeout, attachment: .none, timeWillExpire: true)
        case .finished:
            break
        }
    }

    /// Attaches a copy of a kept file (the attachment takes its file away); false when the
    /// copy cannot be made (another process removed the file since it was found): then it is
    /// downloaded after all.
    private func attachKept(_ entry: MediaCache.Entry, media: PushPayload.Media) -> Bool {
        let begin = clock.now
        let copy = downloadDirectory.appendingPathComponent(UUID().uuidString + "." + entry.type.fileExtension)
        guard (try? FileManager.default.copyItem(at: entry.file, to: copy)) != nil else {
            try? FileManager.default.removeItem(at: copy)
            return false
        }
        let finished = clock.now
        let read = DownloadedMedia(file: copy, type: entry.type, bytes: entry.bytes, variant: media.variant,
                                   downloadMS: Int(((finished - begin).seconds * 1000).rounded()), finishedAt: finished)
        downloadFinished(.downloaded(read), media: media, source: .cache)
        return true
    }

    private func downloadFinished(_ result: DownloadResult, media offered: PushPayload.Media, source: MediaSource = .network) {
        let variant = offered.variant
        switch result {
        case let .downloaded(media):
            let telemetry = AttachmentTelemetry(kind: media.type.kind, format: media.type.format, bytes: media.bytes,
                                                source: source, downloadMS: media.downloadMS, variant: media.variant)
            // A copy for the cache, made before the attachment takes the file and kept only if
            // it is attached: the model counts as kept what was downloaded and attached.
            let staged = source == .network ? cache?.stage(media.file) : nil
            let rich: Content
            do {
                rich = try attach(media, original)
            } catch {
                // No attachment holds the file: nobody else would remove it (up to 50 MB).
                try? FileManager.default.removeItem(at: media.file)
                if let staged { cache?.discard(staged) }
                finish(original, outcome: .unsupportedFormat,
                       attachment: AttachmentTelemetry(kind: .none, format: media.type.format, bytes: media.bytes,
                                                       source: source, downloadMS: media.downloadMS, variant: variant),
                       timeWillExpire: false, downloadFinishedAt: media.finishedAt)
                return
            }
            let proceed: Bool = lock.withLock {
                switch phase {
                case .downloading, .idle:
                    // `.idle`: a kept file, attached within `start()`.
                    phase = .ready(rich, telemetry, media.finishedAt)
                    return true
                case .ready, .finished:
                    return false
                }
            }
            guard proceed else {
                // The deadline delivered the plain content first: the attachment goes nowhere.
                try? FileManager.default.removeItem(at: media.file)
                if let staged { cache?.discard(staged) }
                return
            }
            // Kept after the delivery, which it must not delay; also when the deadline delivered
            // this attachment first.
            let keep = { if let staged { self.cache?.keep(staged: staged, type: media.type, for: offered.url, now: self.now()) } }
            if !finish(finishing(rich), outcome: .attached, attachment: telemetry, timeWillExpire: false,
                       downloadFinishedAt: media.finishedAt, afterDelivery: keep) {
                keep()
            }
        case let .tooLarge(bytes, _):
            // The size the media host declared, which the server takes only up to 2^53.
            finish(original, outcome: .tooLarge,
                   attachment: AttachmentTelemetry(kind: .none, bytes: WireInteger.acceptable(bytes), variant: variant),
                   timeWillExpire: false)
        case .unsupportedFormat:
            finish(original, outcome: .unsupportedFormat, attachment: AttachmentTelemetry(kind: .none, variant: variant),
                   timeWillExpire: false)
        case let .httpStatus(status):
            finish(original, outcome: .downloadFailed,
                   attachment: AttachmentTelemetry(kind: .none, source: .network, variant: variant, httpStatus: status),
                   timeWillExpire: false)
        case .failed:
            finish(original, outcome: .downloadFailed, attachment: AttachmentTelemetry(kind: .none, source: .network, variant: variant),
                   timeWillExpire: false)
        case .timedOut:
            finish(original, outcome: .timeout, attachment: AttachmentTelemetry(kind: .none, variant: variant), timeWillExpire: false)
        case .cancelled:
            break
        }
    }

    /// Records, then delivers, once; then sends what waits, on a best-effort basis. False when
    /// another caller finished first.
    @discardableResult
    private func finish(_ content: Content, outcome: DeliveryOutcome, attachment: AttachmentTelemetry, timeWillExpire: Bool,
                        downloadFinishedAt: ContinuousClock.Instant? = nil, afterDelivery: (() -> Void)? = nil) -> Bool {
        let first: Bool = lock.withLock {
            if case .finished = phase { return false }
            phase = .finished
            return true
        }
        guard first else { return false }
        recordAndDeliver(content, outcome: outcome, attachment: attachment, timeWillExpire: timeWillExpire,
                         downloadFinishedAt: downloadFinishedAt, afterDelivery: afterDelivery)
        return true
    }

    /// The part of finishing after `phase` became `.finished` for this caller alone.
    /// `afterDelivery` runs once the content is delivered and before the report: work the
    /// delivery must not wait for.
    private func recordAndDeliver(_ content: Content, outcome: DeliveryOutcome, attachment: AttachmentTelemetry,
                                  timeWillExpire: Bool, downloadFinishedAt: ContinuousClock.Instant? = nil,
                                  afterDelivery: (() -> Void)? = nil) {
        let processingMS = Int((clock.now - received).seconds * 1000)
        var eventID: UUID?
        var recordError: QueueError?
        do {
            eventID = try client?.recordDelivered(
                notificationID: notificationID, category: category, attachment: attachment, outcome: outcome,
                processingMS: processingMS, timeWillExpire: timeWillExpire, strategy: strategy, experiment: payload.experiment)
        } catch {
            recordError = error as? QueueError
        }
        deliver(content)
        let deliveredAt = clock.now
        let budget = policy.sendBudget(elapsed: deliveredAt - received)
        if !timeWillExpire, let client, budget > .zero {
            lock.withLock {
                sendTask = Task { await client.flush(budget: budget) }
            }
        }
        afterDelivery?()
        onReport?(Report(outcome: outcome, attachment: attachment, timeWillExpire: timeWillExpire, strategy: strategy,
                         experiment: payload.experiment, processingMS: processingMS, eventID: eventID, recordError: recordError,
                         downloadFinishedAt: downloadFinishedAt, deliveredAt: deliveredAt))
    }

    /// Waits for the send started after delivery, if any (tests and benchmarks).
    public func waitForSend() async {
        let task = lock.withLock { sendTask }
        await task?.value
    }
}
