import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Records notification events into a durable queue in the app group container and sends them to
/// an engage server. One instance per process; any number of processes may share a container.
///
/// `record...` calls write the event to disk before they return and never touch the network, so
/// a Notification Service Extension may call its content handler right after. Sending happens in
/// `flush(budget:)` (extensions, with a budget of a second or two) or `run()` (the app, for as
/// long as it is active).
public final class EngageClient: Sendable {
    public struct Configuration: Sendable {
        /// The server's base URL, such as `https://engage.example.com`.
        public var endpoint: URL
        /// A key with the `ingest` role, sent as `Authorization: Bearer`.
        public var ingestKey: String
        /// The shared app group container (`containerURL(forSecurityApplicationGroupIdentifier:)`).
        public var containerDirectory: URL
        /// The pseudonymous installation id put in every event (never a device token).
        public var deviceID: String
        /// Events per request.
        public var batchSize: Int
        /// How often `run()` sends when fewer than `batchSize` events are waiting.
        public var flushInterval: Duration
        /// The queue's limit on disk; beyond it the oldest waiting events are dropped.
        public var maxQueueBytes: Int
        /// The default budget of `flush()`: what an extension can spare before it must finish.
        public var sendBudget: Duration
        /// The longest one request may take (never longer than the claim lease).
        public var requestTimeout: Duration
        /// How long a claimed file belongs to its sender; after that another process may send it.
        public var claimLease: Duration
        public var retry: RetryPolicy
        /// Compress request bodies with gzip (the client's own deflate encoder).
        public var gzip: Bool
        /// How long cached experiment assignments are used without asking the server.
        public var assignmentsTTL: Duration

        public init(endpoint: URL, ingestKey: String, containerDirectory: URL, deviceID: String,
                    batchSize: Int = 50, flushInterval: Duration = .seconds(10), maxQueueBytes: Int = 5 * 1024 * 1024,
                    sendBudget: Duration = .seconds(2), requestTimeout: Duration = .seconds(30),
                    claimLease: Duration = .seconds(60), retry: RetryPolicy = RetryPolicy(), gzip: Bool = true,
                    assignmentsTTL: Duration = .seconds(3600)) {
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
            self.assignmentsTTL = assignmentsTTL
        }
    }

    /// Events that will never be sent, and why. Each is reported once, by the process that
    /// dropped it.
    public struct DroppedEvents: Sendable, Equatable {
        public enum Reason: Sendable, Equatable {
            /// The server refused this event in a 200 answer (`rejected`); sending it again would
            /// fail the same way.
            case rejected(field: String?, problem: String)
            /// The server refused the whole request with a 4xx that retrying cannot fix
            /// (400, 401, 403, 413 for a single event, 415, ...). `problemType` is the
            /// problem document's `type` when there was one.
            case refused(status: Int, problemType: String?)
            /// The queue went over `maxQueueBytes`; these were the oldest waiting.
            case overflow
            /// A queued line that is no longer a JSON event (storage corruption); the text is
            /// in `eventIDs` since there is no id to give.
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
            case cancelled
        }

        public var ending: Ending = .drained
        public var requests = 0
        /// Stored by this flush.
        public var accepted = 0
        /// Already stored earlier (a retry of a request whose answer was lost).
        public var duplicates = 0
        /// Dropped by this flush: rejected, refused or unreadable.
        public var dropped = 0
    }

    public let configuration: Configuration
    private let queue: DiskQueue
    private let transport = Transport()
    private let assignmentCache: AssignmentCache
    private let onDrop: @Sendable (DroppedEvents) -> Void
    private let recordedSinceFlush = Counter()

    /// - Parameter onDrop: called for events the client gives up on, from whichever task
    ///   found out; keep it short (log or count).
    public init(configuration: Configuration, onDrop: @escaping @Sendable (DroppedEvents) -> Void = { _ in }) throws {
        self.configuration = configuration
        queue = try DiskQueue(container: configuration.containerDirectory, maxBytes: configuration.maxQueueBytes,
                              lease: configuration.claimLease.seconds)
        assignmentCache = AssignmentCache(url: queue.root.appendingPathComponent("assignments.json"))
        self.onDrop = onDrop
    }

    deinit {
        transport.invalidate()
    }

    // MARK: Recording

    /// Queues an event durably; it is on disk when this returns.
    @discardableResult
    public func record(_ event: EngageEvent) throws -> UUID {
        let queued = DiskQueue.QueuedEvent(id: event.eventID.uuidString.lowercased(), json: event.json)
        let dropped = try queue.append([queued])
        if !dropped.isEmpty { onDrop(DroppedEvents(reason: .overflow, eventIDs: dropped)) }
        recordedSinceFlush.add(1)
        return event.eventID
    }

    /// The app's server handed a push to APNs. `deviceID` defaults to the configuration's; a
    /// server reporting for many devices passes each one.
    @discardableResult
    public func recordSent(notificationID: String, category: String, media: [MediaVariant],
                           strategy: AttachmentStrategy? = nil, payloadBytes: Int? = nil,
                           experiment: ExperimentArm? = nil, deviceID: String? = nil,
                           properties: [String: JSONValue]? = nil) throws -> UUID {
        try record(EngageEvent(notificationID: notificationID, deviceID: deviceID ?? configuration.deviceID,
                               category: category, experiment: experiment, properties: properties,
                               body: .sent(media: media, strategy: strategy, payloadBytes: payloadBytes)))
    }

    /// The Notification Service Extension finished, on its own or in `serviceExtensionTimeWillExpire()`.
    @discardableResult
    public func recordDelivered(notificationID: String, category: String, attachment: AttachmentTelemetry,
                                outcome: DeliveryOutcome, processingMS: Int, timeWillExpire: Bool,
                                network: NetworkType? = nil, strategy: AttachmentStrategy? = nil,
                                experiment: ExperimentArm? = nil, properties: [String: JSONValue]? = nil) throws -> UUID {
        try record(EngageEvent(notificationID: notificationID, deviceID: configuration.deviceID, category: category,
                               experiment: experiment, properties: properties,
                               body: .delivered(attachment: attachment, outcome: outcome, processingMS: processingMS,
                                                timeWillExpire: timeWillExpire, network: network, strategy: strategy)))
    }

    /// The notification was shown, with its attachment (`rich`) or as text (`plain`).
    @discardableResult
    public func recordDisplayed(notificationID: String, category: String, presentation: Presentation,
                                attachmentKind: AttachmentKind, experiment: ExperimentArm? = nil,
                                properties: [String: JSONValue]? = nil) throws -> UUID {
        try record(EngageEvent(notificationID: notificationID, deviceID: configuration.deviceID, category: category,
                               experiment: experiment, properties: properties,
                               body: .displayed(presentation: presentation, attachmentKind: attachmentKind)))
    }

    /// The Notification Content Extension showed its view.
    @discardableResult
    public func recordExpanded(notificationID: String, category: String, experiment: ExperimentArm? = nil,
                               properties: [String: JSONValue]? = nil) throws -> UUID {
        try record(EngageEvent(notificationID: notificationID, deviceID: configuration.deviceID, category: category,
                               experiment: experiment, properties: properties, body: .expanded))
    }

    /// The user acted: an app-defined action, `AppleActionIdentifier.open` or `.dismiss`. For a
    /// text input action pass only the length of what was typed; the text has no field.
    @discardableResult
    public func recordAction(notificationID: String, category: String, actionID: String,
                             textInputLength: Int? = nil, experiment: ExperimentArm? = nil,
                             properties: [String: JSONValue]? = nil) throws -> UUID {
        try record(EngageEvent(notificationID: notificationID, deviceID: configuration.deviceID, category: category,
                               experiment: experiment, properties: properties,
                               body: .action(actionID: actionID, textInputLength: textInputLength)))
    }

    // MARK: Sending

    /// What is on disk now: waiting events, files claimed by a sender, bytes in all.
    public var pending: (events: Int, claimedFiles: Int, bytes: Int) {
        let status = queue.status()
        return (status.readyEvents, status.claimedFiles, status.bytes)
    }

    /// Sends with the configuration's `sendBudget`.
    @discardableResult
    public func flush() async -> FlushReport {
        await flush(budget: configuration.sendBudget)
    }

    /// Sends waiting events, batch by batch, until none is left or `budget` runs out. It returns
    /// by the budget whatever the network does: a request still running then is cancelled and
    /// its events go back to the queue (the server may have stored them; the next send turns
    /// them into duplicates).
    @discardableResult
    public func flush(budget: Duration) async -> FlushReport {
        let clock = ContinuousClock()
        let deadline = clock.now + budget
        let endpoint = configuration.endpoint.absoluteString
        var report = FlushReport()
        var limit = max(1, min(configuration.batchSize, 1000))
        recordedSinceFlush.reset()
        queue.reclaimExpired()

        while true {
            if Task.isCancelled {
                report.ending = .cancelled
                return report
            }
            if let retry = queue.retryState(endpoint: endpoint) {
                let wait = retry.notBefore.timeIntervalSinceNow
                if wait > 0 {
                    if clock.now + .milliseconds(Int(wait * 1000)) >= deadline {
                        report.ending = .backingOff(until: retry.notBefore)
                        return report
                    }
                    try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1))
                    continue
                }
            }
            let remaining = deadline - clock.now
            guard remaining > .milliseconds(20) else {
                report.ending = .budgetExhausted
                return report
            }
            let (claims, unreadable) = queue.claim(maxEvents: limit)
            if !unreadable.isEmpty {
                report.dropped += unreadable.count
                onDrop(DroppedEvents(reason: .unreadable, eventIDs: unreadable))
            }
            if claims.isEmpty {
                report.ending = .drained
                return report
            }
            let events = claims.flatMap(\.events)
            let timeout = min(remaining, configuration.requestTimeout, configuration.claimLease)
            report.requests += 1
            let outcome = await transport.send(eventsRequest(events), timeout: timeout)

            switch classify(outcome) {
            case let .stored(answer):
                queue.complete(claims)
                queue.setRetryState(nil)
                report.accepted += answer.accepted
                report.duplicates += answer.duplicates
                report.dropped += answer.rejected.count
                for rejection in answer.rejected {
                    let id = rejection.index < events.count ? events[rejection.index].id : "index \(rejection.index)"
                    onDrop(DroppedEvents(reason: .rejected(field: rejection.field, problem: rejection.problem), eventIDs: [id]))
                }
            case let .retryAfter(seconds):
                queue.release(claims)
                let failures = (queue.retryState(endpoint: endpoint)?.failures ?? 0) + 1
                let delay = configuration.retry.afterRetryAfter(seconds)
                queue.setRetryState(.init(endpoint: endpoint, notBefore: Date() + delay, failures: failures))
            case .transient:
                queue.release(claims)
                let failures = (queue.retryState(endpoint: endpoint)?.failures ?? 0) + 1
                let delay = configuration.retry.backoff(failures: failures)
                queue.setRetryState(.init(endpoint: endpoint, notBefore: Date() + delay, failures: failures))
            case let .refused(status, problemType):
                if status == 413, events.count > 1 {
                    queue.release(claims)
                    limit = max(1, events.count / 2)
                    continue
                }
                queue.complete(claims)
                report.dropped += events.count
                onDrop(DroppedEvents(reason: .refused(status: status, problemType: problemType), eventIDs: events.map(\.id)))
            case .interrupted:
                queue.release(claims)
            }
        }
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

    // MARK: Assignments

    /// This device's experiment arms. A cached answer younger than `assignmentsTTL` is used
    /// without asking; otherwise the server is asked (404, no experiments, means none) and when
    /// it cannot answer the last cached answer is used however old, so an offline extension
    /// still applies its arm.
    public func assignments(for deviceID: String? = nil, timeout: Duration? = nil) async -> [Assignment] {
        let device = deviceID ?? configuration.deviceID
        let cached = assignmentCache.read().flatMap { $0.deviceID == device ? $0 : nil }
        if let cached, Date().timeIntervalSince(cached.fetchedAt) < configuration.assignmentsTTL.seconds {
            return cached.assignments
        }
        var components = URLComponents(url: configuration.endpoint.appendingPathComponent("v1/assignments"),
                                       resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "device_id", value: device)]
        guard let url = components?.url else { return cached?.assignments ?? [] }
        var request = URLRequest(url: url)
        request.setValue("Bearer \(configuration.ingestKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let outcome = await transport.send(request, timeout: timeout ?? configuration.sendBudget)
        let fresh: [Assignment]? = switch outcome {
        case let .response(200, _, body): AssignmentsDocument.parse(body)
        case .response(404, _, _): []
        default: nil
        }
        guard let fresh else { return cached?.assignments ?? [] }
        assignmentCache.write(.init(deviceID: device, fetchedAt: Date(), assignments: fresh))
        return fresh
    }

    /// The last assignments fetched for the device, however old, without any network; empty
    /// when none were ever fetched.
    public func cachedAssignments(for deviceID: String? = nil) -> [Assignment] {
        let device = deviceID ?? configuration.deviceID
        guard let entry = assignmentCache.read(), entry.deviceID == device else { return [] }
        return entry.assignments
    }

    // MARK: Requests and answers

    private func eventsRequest(_ events: [DiskQueue.QueuedEvent]) -> URLRequest {
        var request = URLRequest(url: configuration.endpoint.appendingPathComponent("v1/events"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(configuration.ingestKey)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let body = Array(("[" + events.map(\.json).joined(separator: ",") + "]").utf8)
        if configuration.gzip {
            request.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
            request.httpBody = Data(Gzip.compress(body))
        } else {
            request.httpBody = Data(body)
        }
        return request
    }

    struct IngestAnswer: Equatable {
        struct Rejection: Equatable {
            var index: Int
            var field: String?
            var problem: String
        }

        var accepted = 0
        var duplicates = 0
        var rejected: [Rejection] = []
    }

    enum Verdict: Equatable {
        /// 200: everything not rejected is stored.
        case stored(IngestAnswer)
        /// 429 or 503 with `Retry-After`.
        case retryAfter(TimeInterval)
        /// No answer, a 5xx, 408, or 429/503 without `Retry-After`: back off and retry.
        case transient
        /// Any other 4xx: retrying unchanged cannot help.
        case refused(status: Int, problemType: String?)
        /// The budget ran out or the task was cancelled mid-request.
        case interrupted
    }

    func classify(_ outcome: Transport.Outcome) -> Verdict {
        switch outcome {
        case .timedOut, .cancelled:
            return .interrupted
        case .failed:
            return .transient
        case let .response(status, headers, body):
            switch status {
            case 200:
                return .stored(Self.parseAnswer(body))
            case 429, 503:
                if let seconds = RetryPolicy.parseRetryAfter(headers["retry-after"]) { return .retryAfter(seconds) }
                return .transient
            case 408, 500...599:
                return .transient
            case 400...499:
                let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
                return .refused(status: status, problemType: object?["type"] as? String)
            default:
                return .transient
            }
        }
    }

    /// A 200 body; anything unreadable counts as all stored, which is what 200 promises.
    static func parseAnswer(_ body: Data) -> IngestAnswer {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return IngestAnswer() }
        var answer = IngestAnswer()
        answer.accepted = (object["accepted"] as? NSNumber)?.intValue ?? 0
        answer.duplicates = (object["duplicates"] as? NSNumber)?.intValue ?? 0
        for entry in object["rejected"] as? [[String: Any]] ?? [] {
            guard let index = (entry["index"] as? NSNumber)?.intValue else { continue }
            answer.rejected.append(.init(index: index, field: entry["field"] as? String,
                                         problem: entry["problem"] as? String ?? ""))
        }
        return answer
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
