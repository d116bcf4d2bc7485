import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Records notification events into a durable queue in the app group container and sends them to
/// an engage server. One instance per process; any number of processes may share a container.
///
/// `record...` calls write the event to disk before they return and never touch the network, so
/// a Notification Service Extension may call its content handler right after. Sending happens in
/// `flush(budget:)` (extensions, afterwards and on a best-effort basis) or `run()` (the app, for
/// as long as it is active).
public final class EngageClient: Sendable {
    public struct Configuration: Sendable {
        /// The server's base URL, such as `https://engage.example.com`.
        public var endpoint: URL
        /// A key with the `ingest` role, sent as `Authorization: Bearer`.
        public var ingestKey: String
        /// The shared app group container (`containerURL(forSecurityApplicationGroupIdentifier:)`).
        public var containerDirectory: URL
        /// The pseudonymous installation id put in every event (`InstallationID.readOrCreate(in:)`;
        /// never a device token).
        public var deviceID: String
        /// Events per request, and per queue segment.
        public var batchSize: Int
        /// How often `run()` sends when fewer than `batchSize` events are waiting.
        public var flushInterval: Duration
        /// The queue's limit on disk; beyond it the oldest waiting events are dropped.
        public var maxQueueBytes: Int
        /// The default budget of `flush()`.
        public var sendBudget: Duration
        /// The longest one request may take (never longer than the claim lease).
        public var requestTimeout: Duration
        /// How long a claimed segment belongs to its sender; after that another process may send it.
        public var claimLease: Duration
        public var retry: RetryPolicy
        /// Compress request bodies with gzip (the client's own deflate encoder).
        public var gzip: Bool
        /// The data protection class of the queue's files (see `QueueFileProtection`).
        public var fileProtection: QueueFileProtection
        /// The queue's own name in the container; nil: the one queue of the container. Apps of one
        /// team that share an App Group give each app (and its extensions) a name of its own, such
        /// as the app's bundle identifier: whichever process sends a queue's events sends them
        /// with its own key, so two apps on one queue would send each other's events as theirs.
        /// Letters, digits, `.`, `-` and `_`, 1 to 100 of them, not beginning with `.`.
        public var queueName: String?

        public init(endpoint: URL, ingestKey: String, containerDirectory: URL, deviceID: String,
                    batchSize: Int = 50, flushInterval: Duration = .seconds(10), maxQueueBytes: Int = 5 * 1024 * 1024,
                    sendBudget: Duration = .seconds(2), requestTimeout: Duration = .seconds(30),
                    claimLease: Duration = .seconds(60), retry: RetryPolicy = RetryPolicy(), gzip: Bool = true,
                    fileProtection: QueueFileProtection = .completeUntilFirstUserAuthentication, queueName: String? = nil) {
            self.endpoint = endpoint
            self.ingestKey = ingestKey
            self.containerDirectory = containerDirectory
            self.deviceID = deviceID
            self.batchSize = batchSize
            self.flushInterval = flushInterval
            self.maxQueueBytes = maxQueueBytes
            self.sendBudget = sendBudget
            self.requestTimeout = requestTimeout
            self.claimLease = claimLease
            self.retry = retry
            self.gzip = gzip
            self.fileProtection = fileProtection
            self.queueName = queueName
        }
    }

    /// Events that will never be sent, and why. Each is reported once, by the process that
    /// dropped it, and counted in `dropCounts`.
    public struct DroppedEvents: Sendable, Equatable {
        public enum Reason: Sendable, Equatable {
            /// The server refused this event in a 200 answer's `rejected`, or in its 400
            /// `no-valid-events`, which lists every event the same way; sending it again would
            /// fail the same way.
            case rejected(field: String?, problem: String)
            /// engage refused the whole request with a 4xx of its own that retrying cannot fix
            /// (400, or 413 for a single event): `problemType` is its problem document's `type`,
            /// under `https://engage.dev/problems/`. Its 401, 403, 404, 405, 415 and 431 refuse
            /// the key, the address, the body's type or the headers and drop nothing, nor do its
            /// 400s for the request's form (`bad-gzip`, `bad-sent-at`, `bad-occurred-at-clock`)
            /// or a 4xx from anything else on the way. Its 400 `no-valid-events` drops each
            /// event as `rejected`, with the field and problem it lists.
            case refused(status: Int, problemType: String?)
            /// The queue went over `maxQueueBytes`; these were the oldest waiting.
            case overflow
            /// The disk was full; these, the oldest waiting, made room for a new event.
            case diskFull
            /// Never reported now: versions that judged age by the device's clock dropped events
            /// they found older than `maxEventAge`. Kept so that an app's `switch` written for
            /// them still builds; the server's refusals of old events are `rejected`.
            case expired
            /// A queued line that is no longer a JSON event, or a file that cannot be read
            /// (storage corruption); the text is in `eventIDs` since there is no id to give. It
            /// is kept in the queue's `quarantine/` folder.
            case unreadable
        }

        public var reason: Reason
        public var eventIDs: [String]
    }

    /// What one `flush` did.
    public struct FlushReport: Sendable, Equatable {
        public enum Ending: Sendable, Equatable {
            /// No event was left waiting (some may still be claimed by another process).
            case drained
            /// The budget ran out; waiting events stay on disk.
            case budgetExhausted
            /// The server asked for a pause (or failed) and the next attempt is after the budget.
            case backingOff(until: Date)
            /// The queue's files cannot be opened now (the device is locked and the files have a
            /// stricter protection class than `fileProtection`, or the process is out of file
            /// descriptors or memory for a moment); they wait.
            case storageUnavailable
            case cancelled
        }

        public var ending: Ending = .drained
        public var requests = 0
        /// Delivered by this flush: stored by its requests, or found already stored when resending
        /// events an earlier send of this queue got no answer for (that send stored them), as far
        /// as the answer's counts prove it (`ResentDuplicates`): never an event stored from elsewhere.
        public var accepted = 0
        /// Already stored: an event recorded again under an id the server already had (a
        /// name-based id, recorded twice), or, rarely, this queue's own unanswered send in a request
        /// also carrying events never sent before, whose counts cannot tell the two apart.
        public var duplicates = 0
        /// Dropped by this flush: rejected, refused or unreadable.
        public var dropped = 0
    }

    public let configuration: Configuration
    let queue: DiskQueue
    let transport = Transport()
    /// The wall clock (a test's own); the package's glue reads it too (a sweep's display times).
    package let now: @Sendable () -> Date
    /// Beside `now`, to tell how far the wall clock was set between recording and sending.
    let bootClock: BootClock
    private let onDrop: @Sendable (DroppedEvents) -> Void
    private let recordedSinceFlush = Counter()
    /// Set once engage answered `bad-gzip` to a compressed request (something on the way
    /// inflates bodies): this client sends uncompressed from then on, not once more per flush.
    private let compressionRefused = Counter()

    /// - Parameter onDrop: called for events the client gives up on, from whichever task
    ///   found out; keep it short (log or count).
    public convenience init(configuration: Configuration, onDrop: @escaping @Sendable (DroppedEvents) -> Void = { _ in }) throws {
        try self.init(configuration: configuration, now: { Date() }, onDrop: onDrop)
    }

    /// `now` is the wall clock used for event times, backoff and claims, and `bootClock` the time
    /// since boot beside it (tests move both); `protectionObserver` sees every file and directory
    /// the queue protects (tests on Linux).
    init(configuration: Configuration, now: @escaping @Sendable () -> Date, bootClock: BootClock = .system,
         protectionObserver: (@Sendable (String, QueueFileProtection) -> Void)? = nil,
         onDrop: @escaping @Sendable (DroppedEvents) -> Void) throws {
        self.configuration = configuration
        var options = DiskQueue.Options(maxBytes: configuration.maxQueueBytes)
        options.segmentEvents = max(1, min(configuration.batchSize, 1000))
        options.lease = configuration.claimLease.seconds
        options.protection = FileProtector(protection: configuration.fileProtection, observe: protectionObserver)
        options.name = configuration.queueName
        queue = try DiskQueue(container: configuration.containerDirectory, options: options)
        self.now = now
        self.bootClock = bootClock
        self.onDrop = onDrop
    }

    deinit {
        transport.invalidate()
    }

    // MARK: Recording

    /// Queues an event durably; it is on disk when this returns. An event whose id is among the
    /// last ones recorded (`EngageEvent.onceID`) is not queued again.
    @discardableResult
    public func record(_ event: EngageEvent) throws -> UUID {
        try record(event, once: event.isRecordedOnce(queueName: configuration.queueName), clock: nil)
    }

    /// `once`: the event carries its once id (the queue skips a repeat); the client's own
    /// `recordOnce` knows it made one and does not hash the names again to find out. `clock`:
    /// the event's time is the wall clock the client read, which stood there (`RecordingClock`).
    private func record(_ event: EngageEvent, once: Bool, clock: RecordingClock?) throws -> UUID {
        guard Self.writableYears.contains(event.occurredAt.timeIntervalSince1970) else {
            throw EventFieldError(field: "occurred_at", problem: "is not a time of the years 0000 to 9999")
        }
        let id = event.eventID.uuidString.lowercased()
        let queued = DiskQueue.QueuedEvent(id: id, json: clock?.stamp(event.json) ?? event.json)
        let result: DiskQueue.AppendResult
        do {
            result = try queue.append([queued], onceID: once ? id : nil)
        } catch let failed as DiskQueue.AppendFailed {
            report(failed.dropped)
            throw failed.cause
        }
        report(result.dropped)
        if !result.alreadyRecorded { recordedSinceFlush.add(1) }
        return event.eventID
    }

    /// The app's server handed a push to APNs. `deviceID` defaults to the configuration's; a
    /// server reporting for many devices passes each one. Pass the arm and strategy put in the
    /// push's payload (`PushPayload`), so that every event of the notification carries the same.
    @discardableResult
    public func recordSent(notificationID: String, category: String, media: [MediaVariant],
                           strategy: AttachmentStrategy? = nil, payloadBytes: Int? = nil,
                           experiment: ExperimentArm? = nil, deviceID: String? = nil,
                           properties: [String: JSONValue]? = nil) throws -> UUID {
        let wall = now()
        let event = EngageEvent(notificationID: notificationID, deviceID: deviceID ?? configuration.deviceID,
                                category: category, occurredAt: wall, experiment: experiment, properties: properties,
                                body: .sent(media: media, strategy: strategy, payloadBytes: payloadBytes))
        return try record(event, once: event.isRecordedOnce(queueName: configuration.queueName),
                          clock: RecordingClock(wall: wall, boot: bootClock))
    }

    /// The Notification Service Extension finished, on its own or in `serviceExtensionTimeWillExpire()`.
    /// Recorded once per notification (a name-based id).
    @discardableResult
    public func recordDelivered(notificationID: String, category: String, attachment: AttachmentTelemetry,
                                outcome: DeliveryOutcome, processingMS: Int, timeWillExpire: Bool,
                                network: NetworkType? = nil, strategy: AttachmentStrategy? = nil,
                                experiment: ExperimentArm? = nil, occurredAt: Date? = nil,
                                properties: [String: JSONValue]? = nil) throws -> UUID {
        try recordOnce(notificationID: notificationID, category: category, experiment: experiment, occurredAt: occurredAt,
                       properties: properties,
                       body: .delivered(attachment: attachment, outcome: outcome, processingMS: processingMS,
                                        timeWillExpire: timeWillExpire, network: network, strategy: strategy))
    }

    /// The notification was shown, with its attachment (`rich`) or as text (`plain`). Recorded
    /// once per notification (a name-based id), so the app's `willPresent` and a later sweep of
    /// delivered notifications count it once. `occurredAt` is when it was shown (for a sweep,
    /// the notification's date).
    @discardableResult
    public func recordDisplayed(notificationID: String, category: String, presentation: Presentation,
                                attachmentKind: AttachmentKind, experiment: ExperimentArm? = nil,
                                occurredAt: Date? = nil, properties: [String: JSONValue]? = nil) throws -> UUID {
        try recordOnce(notificationID: notificationID, category: category, experiment: experiment, occurredAt: occurredAt,
                       properties: properties, body: .displayed(presentation: presentation, attachmentKind: attachmentKind))
    }

    /// The Notification Content Extension showed its view. Recorded once per notification.
    @discardableResult
    public func recordExpanded(notificationID: String, category: String, experiment: ExperimentArm? = nil,
                               properties: [String: JSONValue]? = nil) throws -> UUID {
        try recordOnce(notificationID: notificationID, category: category, experiment: experiment, occurredAt: nil,
                       properties: properties, body: .expanded)
    }

    /// The user acted: an app-defined action, `AppleActionIdentifier.open` or `.dismiss`. For a
    /// text input action pass only the length of what was typed; the text has no field.
    /// Recorded once per notification and action id, so the Content Extension and the app (to
    /// which it forwards the action) may both record it.
    @discardableResult
    public func recordAction(notificationID: String, category: String, actionID: String,
                             textInputLength: Int? = nil, experiment: ExperimentArm? = nil,
                             properties: [String: JSONValue]? = nil) throws -> UUID {
        try recordOnce(notificationID: notificationID, category: category, experiment: experiment, occurredAt: nil,
                       properties: properties, body: .action(actionID: actionID, textInputLength: textInputLength))
    }

    /// A time the app gives goes as given: it may be on another clock, or have been read before
    /// the clock was last set (a notification's date).
    private func recordOnce(notificationID: String, category: String, experiment: ExperimentArm?, occurredAt: Date?,
                            properties: [String: JSONValue]?, body: EngageEvent.Body) throws -> UUID {
        let wall = occurredAt ?? now()
        return try record(EngageEvent.once(notificationID: notificationID, deviceID: configuration.deviceID, category: category,
                                           occurredAt: wall, experiment: experiment, properties: properties,
                                           queueName: configuration.queueName, body: body),
                          once: true, clock: occurredAt == nil ? RecordingClock(wall: wall, boot: bootClock) : nil)
    }

    // MARK: Looking

    /// What is on disk now: waiting events, segments claimed by a sender, bytes in all.
    public var pending: (events: Int, claimedFiles: Int, bytes: Int) {
        let status = queue.status()
        return (status.readyEvents, status.claimedFiles, status.bytes)
    }

    /// The ids of the events waiting or being sent, oldest first (diagnostics).
    public func pendingEventIDs() -> [String] {
        queue.eventIDs()
    }

    /// What every process of the app dropped so far, by reason.
    public var dropCounts: DropCounts {
        queue.dropCounts
    }

    func report(_ drops: DiskQueue.Drops) {
        if !drops.overflow.isEmpty { onDrop(DroppedEvents(reason: .overflow, eventIDs: drops.overflow)) }
        if !drops.diskFull.isEmpty { onDrop(DroppedEvents(reason: .diskFull, eventIDs: drops.diskFull)) }
        if !drops.unreadable.isEmpty { onDrop(DroppedEvents(reason: .unreadable, eventIDs: drops.unreadable)) }
    }

    // MARK: Sending

    /// Sends with the configuration's `sendBudget`.
    @discardableResult
    public func flush() async -> FlushReport {
        await flush(budget: configuration.sendBudget)
    }

    /// Sends waiting events, segment by segment, until none is left or `budget` runs out. It
    /// returns by the budget whatever the network does: a request still running then is
    /// cancelled and its events go back to the queue (the server may have stored them; the next
    /// send turns them into duplicates).
    @discardableResult
    public func flush(budget: Duration) async -> FlushReport {
        let clock = ContinuousClock()
        let deadline = clock.now + budget
        let endpoint = configuration.endpoint.absoluteString
        var report = FlushReport()
        var limit = max(1, min(configuration.batchSize, 1000))
        var compresses = configuration.gzip && compressionRefused.value == 0
        recordedSinceFlush.reset()
        queue.reclaimExpired(now: now())

        while true {
            if Task.isCancelled {
                report.ending = .cancelled
                return report
            }
            if let notBefore = backoff(endpoint: endpoint) {
                let wait = notBefore.timeIntervalSince(now())
                if clock.now + .milliseconds(Int(wait * 1000)) >= deadline {
                    report.ending = .backingOff(until: notBefore)
                    return report
                }
                try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1))
                continue
            }
            let remaining = deadline - clock.now
            guard remaining > .milliseconds(20) else {
                report.ending = .budgetExhausted
                return report
            }
            let claimed = queue.claim(maxEvents: limit, now: now())
            self.report(claimed.dropped)
            report.dropped += claimed.dropped.unreadable.count
            let claims = claimed.claims
            if claims.isEmpty {
                report.ending = claimed.storageUnavailable ? .storageUnavailable : .drained
                return report
            }
            let events = claims.flatMap(\.events)
            let timeout = min(remaining, configuration.requestTimeout, configuration.claimLease)
            report.requests += 1
            let sentAt = now()
            let outcome = await transport.send(eventsRequest(events, compressed: compresses), timeout: timeout)

            switch IngestAnswer.classify(outcome, sent: events.count) {
            case let .stored(answer):
                queue.complete(claims)
                queue.clearRetryState(answeringRequestSentAt: sentAt, endpoint: endpoint)
                // Duplicates of events this queue sent before without an answer are those sends
                // arriving: delivered. The answer gives counts, not which events were duplicates,
                // so only as many as must be among the unanswered ones (`ResentDuplicates`).
                let arrivedEarlier = ResentDuplicates.arrivedEarlier(
                    duplicates: answer.duplicates, eventIDs: events.map(\.id),
                    unanswered: queue.takeUnansweredIDs(events.map(\.id)), rejected: Set(answer.rejected.map(\.index)))
                report.accepted += answer.accepted + arrivedEarlier
                report.duplicates += answer.duplicates - arrivedEarlier
                report.dropped += answer.rejected.count
                var counts = DropCounts()
                counts.rejected = answer.rejected.count
                if counts.rejected > 0 { queue.count(counts) }
                for rejection in answer.rejected {
                    let id = events[rejection.index].id
                    onDrop(DroppedEvents(reason: .rejected(field: rejection.field, problem: rejection.problem), eventIDs: [id]))
                }
            case let .retryAfter(seconds):
                queue.markUnanswered(events.map(\.id))
                queue.release(claims)
                let delay = configuration.retry.afterRetryAfter(seconds)
                queue.recordFailure(endpoint: endpoint, now: now(), longestWait: configuration.retry.longestWait) { _ in delay }
            case .transient:
                queue.markUnanswered(events.map(\.id))
                retryLater(claims, endpoint: endpoint)
            case let .tooLarge(problemType):
                // Whoever set the limit (engage, or a proxy on the way), fewer events may pass.
                if claims.count > 1 {
                    queue.release(claims)
                    // A claim takes whole segments until it holds `limit` events, and may pass it
                    // by most of a segment: half of what was sent can claim the same segments
                    // again (a split's halves wait behind a smaller segment). The limit also
                    // leaves out the last segment, so each 413 claims at least one fewer.
                    limit = max(1, min(events.count / 2, events.count - claims[claims.count - 1].events.count))
                    continue
                }
                if events.count > 1 {
                    // One segment over the limit: its halves go back in line, down to one event.
                    guard let halves = queue.split(claims[0], now: now()) else {
                        retryLater(claims, endpoint: endpoint)
                        continue
                    }
                    queue.release(halves)
                    limit = max(1, events.count / 2)
                    continue
                }
                // One event over the limit: engage's 413 refuses it for good.
                if let problemType {
                    drop(claims, events: events, status: 413, problemType: problemType, into: &report)
                } else {
                    retryLater(claims, endpoint: endpoint)
                }
            case let .refused(status, problemType):
                drop(claims, events: events, status: status, problemType: problemType, into: &report)
            case let .formRefused(problemType):
                queue.release(claims)
                if problemType == IngestAnswer.badGzip, compresses {
                    // Something on the way inflated the body and kept its Content-Encoding: the
                    // same events go again at once, uncompressed, and so does everything after.
                    compresses = false
                    compressionRefused.add(1)
                    continue
                }
                // A server that reads the clock headers otherwise: nothing of the request was
                // stored, and the events wait for one that takes them, as after a 404 or 415.
                queue.recordFailure(endpoint: endpoint, now: now(), longestWait: configuration.retry.longestWait) { configuration.retry.backoff(failures: $0) }
            case .timedOut:
                queue.markUnanswered(events.map(\.id))
                if timeout >= Self.answerWait(configuration) {
                    // Time enough for any engage that works: it is struggling (a commit stalled
                    // on its database) as much as one that answers 503, and every device resending
                    // at each flush without growing waits would keep it down.
                    retryLater(claims, endpoint: endpoint)
                } else {
                    // The flush's own budget (an extension's 2 s) ended the wait: nothing said
                    // about the server, and no backoff for the app's next flushes.
                    queue.release(claims)
                }
            case .interrupted:
                queue.markUnanswered(events.map(\.id))
                queue.release(claims)
            }
        }
    }

    /// A request given this long (or its whole `requestTimeout`) without an answer counts as the
    /// server's failure to answer; one cut shorter by the flush's budget does not.
    static let longEnoughToAnswer: Duration = .seconds(10)

    /// How long a request must have waited for its silence to count as the server's (see
    /// `longEnoughToAnswer`): nine tenths of it, as a flush whose budget is the request timeout
    /// (`run()`) gives its request a little less than all of it.
    static func answerWait(_ configuration: Configuration) -> Duration {
        min(configuration.requestTimeout, configuration.claimLease, longEnoughToAnswer) * 0.9
    }

    /// Puts the claims back in line and backs off by the policy's next step.
    private func retryLater(_ claims: [DiskQueue.Claim], endpoint: String) {
        queue.release(claims)
        queue.recordFailure(endpoint: endpoint, now: now(), longestWait: configuration.retry.longestWait) { configuration.retry.backoff(failures: $0) }
    }

    /// Deletes claims engage refused for good, and reports their events.
    private func drop(_ claims: [DiskQueue.Claim], events: [DiskQueue.QueuedEvent], status: Int, problemType: String?,
                      into report: inout FlushReport) {
        queue.complete(claims)
        _ = queue.takeUnanswered(events.map(\.id))
        report.dropped += events.count
        var counts = DropCounts()
        counts.refused = events.count
        queue.count(counts)
        onDrop(DroppedEvents(reason: .refused(status: status, problemType: problemType), eventIDs: events.map(\.id)))
    }

    /// When the next request to `endpoint` may go, if that is still ahead. A time further ahead
    /// than any backoff this policy gives means the wall clock was set back since it was
    /// written: it is ignored, so a clock change delays sending by at most one backoff.
    func backoff(endpoint: String) -> Date? {
        guard let state = queue.retryState(endpoint: endpoint) else { return nil }
        let wait = state.notBefore.timeIntervalSince(now())
        guard wait > 0, wait <= configuration.retry.longestWait else { return nil }
        return state.notBefore
    }

    /// Sends for as long as the calling task runs: every `flushInterval`, or sooner once this
    /// process recorded `batchSize` events. Run it from the app while it is active (for example
    /// in a SwiftUI `.task`); extensions call `flush(budget:)` instead.
    public func run() async {
        let clock = ContinuousClock()
        let tick = min(configuration.flushInterval, .seconds(1))
        var next = clock.now
        while !Task.isCancelled {
            if clock.now >= next || recordedSinceFlush.value >= configuration.batchSize {
                await flush(budget: configuration.requestTimeout)
                next = clock.now + configuration.flushInterval
            }
            try? await Task.sleep(for: tick)
        }
    }

    // MARK: Requests

    /// The request header with this device's clock as it sends (the server's `ClockCorrection`).
    public static let sentAtHeader = "Engage-Sent-At"
    /// The request header naming the events whose times are on the clock `Engage-Sent-At` reads
    /// (`RecordingClock`).
    public static let occurredAtClockHeader = "Engage-Occurred-At-Clock"
    /// Seconds since 1970 of 0000-01-01T00:00:00Z through 9999-12-31T23:59:59.999Z.
    static let writableYears: ClosedRange<TimeInterval> = -62_167_219_200...253_402_300_799.999

    private func eventsRequest(_ events: [DiskQueue.QueuedEvent], compressed: Bool) -> URLRequest {
        var request = URLRequest(url: configuration.endpoint.appendingPathComponent("v1/events"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(configuration.ingestKey)", forHTTPHeaderField: "Authorization")
        // One event per line, as queued: the server parses each line on its own, so an event it
        // cannot parse (JSON nested deeper than it takes) is rejected alone, by its index, where
        // in an array it would make the whole request malformed and every event of it refused.
        request.setValue("application/x-ndjson", forHTTPHeaderField: "Content-Type")
        // Read as the request is made, each retry anew: the server measures this clock against
        // its own, and undoes its error for the events on it (`EventsAsSent`), and for the others
        // whose times lie ahead, instead of rejecting them.
        // A clock outside the years RFC 3339 can write would have the whole batch refused.
        let clock = now()
        let writable = Self.writableYears.contains(clock.timeIntervalSince1970)
        // Without the clock as sent, the server has nothing to measure: the times go as recorded.
        let sending = EventsAsSent(events.map(\.json), now: writable ? RecordingClock(wall: clock, boot: bootClock) : nil)
        if writable {
            request.setValue(Timestamp.rfc3339(clock), forHTTPHeaderField: Self.sentAtHeader)
            request.setValue(sending.header, forHTTPHeaderField: Self.occurredAtClockHeader)
        }
        let body = Array(sending.lines.map { $0 + "\n" }.joined().utf8)
        if compressed {
            request.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
            request.httpBody = Data(Gzip.compress(body))
        } else {
            request.httpBody = Data(body)
        }
        return request
    }
}

/// A count shared by the recording calls and `run()`.
private final class Counter: @unchecked Sendable {
    // NSLock rather than Synchronization.Mutex, which older iOS releases lack; every access
    // takes the lock.
    private let lock = NSLock()
    private var count = 0

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    func add(_ amount: Int) {
        lock.lock()
        count += amount
        lock.unlock()
    }

    func reset() {
        lock.lock()
        count = 0
        lock.unlock()
    }
}
