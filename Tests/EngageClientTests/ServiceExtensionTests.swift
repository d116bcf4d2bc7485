import ClientTestSupport
import EngageAPI
import Foundation
import Testing
import TestSupport
@testable import EngageClient
@testable import EngageNotificationService

/// What stands in for `UNNotificationContent` on Linux: the content and its attachment file.
struct FakeContent: Sendable, Equatable {
    var title: String
    var attachment: String?
}

/// One session run to its end: what was delivered, how often, and the report.
final class SessionProbe: @unchecked Sendable {
    // Guards everything below: the session calls back from URLSession and timer threads.
    private let lock = NSLock()
    private var delivered: [FakeContent] = []
    private var reports: [NotificationServiceSession<FakeContent>.Report] = []
    private var waiting: CheckedContinuation<Void, Never>?
    /// Checks run inside `deliver`, while the handler is being called.
    var duringDelivery: (@Sendable () -> Void)?

    var deliveries: [FakeContent] { lock.withLock { delivered } }
    var report: NotificationServiceSession<FakeContent>.Report? { lock.withLock { reports.first } }
    var reportCount: Int { lock.withLock { reports.count } }

    func deliver(_ content: FakeContent) {
        duringDelivery?()
        lock.withLock { delivered.append(content) }
    }

    func record(_ report: NotificationServiceSession<FakeContent>.Report) {
        let continuation: CheckedContinuation<Void, Never>? = lock.withLock {
            reports.append(report)
            defer { waiting = nil }
            return waiting
        }
        continuation?.resume()
    }

    /// Returns once a report came.
    func finished() async {
        await withCheckedContinuation { continuation in
            let done: Bool = lock.withLock {
                if !reports.isEmpty { return true }
                waiting = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}

func makeSession(client: EngageClient?, payload: PushPayload, notificationID: String = "n-1", probe: SessionProbe,
                 directory: URL, policy: ServiceExtensionPolicy = ServiceExtensionPolicy(sendBudget: .zero),
                 attach: @escaping (DownloadedMedia, FakeContent) throws -> FakeContent = { media, content in
                     FakeContent(title: content.title, attachment: media.file.lastPathComponent)
                 },
                 finishing: @escaping (FakeContent) -> FakeContent = { $0 },
                 receivedAt: ContinuousClock.Instant? = nil) -> NotificationServiceSession<FakeContent> {
    NotificationServiceSession<FakeContent>(
        client: client, notificationID: notificationID, category: "new_photo", payload: payload, policy: policy,
        downloadDirectory: directory, original: FakeContent(title: "New photo"), attach: attach, finishing: finishing,
        deliver: { probe.deliver($0) }, onReport: { probe.record($0) }, receivedAt: receivedAt)
}

/// The JSON of the queued `delivered` event of a notification.
func queuedDelivered(_ container: Container, notificationID: String, deviceID: String = "dev-test-1") throws -> [String: Any] {
    let id = EngageEvent.onceID(deviceID: deviceID, notificationID: notificationID, type: "delivered").uuidString.lowercased()
    let lines = ["ready", "claimed"].flatMap { folder in container.files(folder).flatMap { container.text(folder + "/" + $0).split(separator: "\n") } }
    let line = try #require(lines.first { $0.contains(id) })
    return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

/// JSON text with sorted keys, so that equal values compare equal.
func canonical(_ value: Any?) throws -> String {
    let object = try #require(value)
    return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
}

@Suite("Notification Service Extension: the session", .serialized)
struct ServiceExtensionTests {
    static let media = PushPayload.Media(variant: "original", url: URL(string: "http://127.0.0.1:9/none.jpg")!)

    /// The arm comes from the payload: an assignments cache an older version of the app left
    /// in the container, naming another arm, changes nothing.
    /// An attachment iOS refuses to make (`attach` throws) leaves no downloaded file behind:
    /// the plain content goes, as `unsupported_format`, and the file with nothing holding it.
    @Test func aFileNoAttachmentTookIsRemoved() async throws {
        let downloads = Container()
        try FileManager.default.createDirectory(at: downloads.url, withIntermediateDirectories: true)
        defer { downloads.remove() }
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")], body: MediaSamples.jpeg(20_000),
                                                   declareLength: true))
        defer { host.stop() }
        struct Refused: Error {}
        let payload = PushPayload(notificationID: "n-refused", strategy: "full",
                                  media: [PushPayload.Media(variant: "original", url: host.url.appendingPathComponent("p.jpg"))])
        let probe = SessionProbe()
        let attempted = Recorder<String>()
        let session = makeSession(client: nil, payload: payload, notificationID: "n-refused", probe: probe, directory: downloads.url,
                                  attach: { media, _ in
                                      attempted.add(media.file.lastPathComponent)
                                      throw Refused()
                                  })
        session.start()
        await probe.finished()
        #expect(attempted.all.count == 1)
        #expect(probe.deliveries == [FakeContent(title: "New photo")])
        #expect(probe.report?.outcome == .unsupportedFormat)
        #expect(try FileManager.default.contentsOfDirectory(atPath: downloads.url.path).isEmpty)
    }

    @Test func theArmComesFromThePayloadNotFromACache() async throws {
        let container = Container()
        defer { container.remove() }
        let engage = try FaultInjector(reply: .hang)
        defer { engage.stop() }
        let client = try makeClient(container, port: engage.port, key: "egk_x")
        try Data(#"{"device_id":"dev-test-1","fetched_at_ms":1,"assignments":[{"experiment":"exp","arm":"control","strategy":"full","probability":0.5}]}"#.utf8)
            .write(to: URL(fileURLWithPath: container.path("assignments.json")))
        let payload = PushPayload(notificationID: "n-1", experiment: ExperimentArm(id: "exp", arm: "treatment", probability: 0.5),
                                  strategy: "none", media: [Self.media])
        let probe = SessionProbe()
        let session = makeSession(client: client, payload: payload, probe: probe, directory: container.url)
        session.start()
        await probe.finished()
        let event = try queuedDelivered(container, notificationID: "n-1")
        #expect(try canonical(event["experiment"]) == #"{"arm":"treatment","id":"exp","probability":0.5}"#)
        #expect(event["strategy"] as? String == "none")
        #expect(event["outcome"] as? String == "not_requested")
        #expect(probe.deliveries == [FakeContent(title: "New photo")])
    }

    /// The content handler is called once, with the attachment, and the `delivered` event is on
    /// disk by then and not yet claimed by any sender: sending starts only after the handler.
    @Test func theHandlerIsCalledOnceAfterTheEventIsOnDiskAndBeforeAnySending() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")], body: MediaSamples.jpeg(50_000),
                                                   declareLength: true))
        defer { host.stop() }
        let client = try makeClient(container, port: server.port, key: try await server.key())
        let payload = PushPayload(notificationID: "n-2", strategy: "full",
                                  media: [PushPayload.Media(variant: "original", url: host.url.appendingPathComponent("p.jpg"))])
        let probe = SessionProbe()
        let expectedID = EngageEvent.onceID(deviceID: "dev-test-1", notificationID: "n-2", type: "delivered").uuidString.lowercased()
        let seenAtDelivery = Recorder<(queued: Bool, claimed: Int)>()
        probe.duringDelivery = {
            seenAtDelivery.add((client.pendingEventIDs().contains(expectedID), container.files("claimed").count))
        }
        let session = makeSession(client: client, payload: payload, notificationID: "n-2", probe: probe, directory: container.url,
                                  policy: ServiceExtensionPolicy(sendBudget: .seconds(10)))
        session.start()
        await probe.finished()
        #expect(probe.deliveries.count == 1)
        #expect(probe.deliveries.first?.attachment?.hasSuffix(".jpg") == true)
        #expect(seenAtDelivery.all.map(\.queued) == [true])
        #expect(seenAtDelivery.all.map(\.claimed) == [0])
        let report = try #require(probe.report)
        #expect(report.outcome == .attached)
        #expect(report.eventID?.uuidString.lowercased() == expectedID)
        #expect(report.attachment == AttachmentTelemetry(kind: .image, format: .jpeg, bytes: 50_000, source: .network,
                                                         downloadMS: report.attachment.downloadMS, variant: "original"))
        // The send that follows the handler stores the event.
        await session.waitForSend()
        #expect(try await stored(server, [try #require(report.eventID)]) == 1)
        // iOS calling serviceExtensionTimeWillExpire later changes nothing.
        session.expire()
        #expect(probe.deliveries.count == 1)
        #expect(probe.reportCount == 1)
        await server.stop()
    }

    /// iOS ends the extension while the download hangs: the original content goes out at once,
    /// recorded as a timeout of the variant being downloaded, once (as a timeout of the
    /// download itself is).
    @Test func expiryDuringTheDownloadDeliversThePlainContent() async throws {
        let container = Container()
        defer { container.remove() }
        let host = try FaultInjector(reply: .stall(status: 200, headers: [("Content-Type", "image/jpeg")], body: MediaSamples.jpeg(100),
                                                   declaredLength: 100_000))
        defer { host.stop() }
        let client = try makeClient(container, port: try FaultInjector.closedPort(), key: "egk_x")
        let payload = PushPayload(notificationID: "n-3", media: [PushPayload.Media(variant: "original", url: host.url.appendingPathComponent("p.jpg"))])
        let probe = SessionProbe()
        let session = makeSession(client: client, payload: payload, notificationID: "n-3", probe: probe, directory: container.url)
        session.start()
        while host.hits.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        session.expire()
        await probe.finished()
        #expect(probe.deliveries == [FakeContent(title: "New photo")])
        let report = try #require(probe.report)
        #expect(report.outcome == .timeout)
        #expect(report.timeWillExpire)
        let event = try queuedDelivered(container, notificationID: "n-3")
        #expect(event["outcome"] as? String == "timeout")
        #expect(event["time_will_expire"] as? Bool == true)
        #expect(try canonical(event["attachment"]) == #"{"kind":"none","variant":"original"}"#)
    }

    /// The time limit and `processing_ms` count from when the push reached the extension,
    /// which the glue takes before making the client (a first push makes it, and that takes
    /// time): 3 s spent before the session began are in both.
    @Test func timeSpentBeforeTheSessionBeganCounts() async throws {
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: try FaultInjector.closedPort(), key: "egk_x")
        let probe = SessionProbe()
        let policy = ServiceExtensionPolicy(timeLimit: .seconds(5), reserve: .seconds(2), sendBudget: .zero)
        let payload = PushPayload(notificationID: "n-late", media: [Self.media])
        let session = makeSession(client: client, payload: payload, notificationID: "n-late", probe: probe, directory: container.url,
                                  policy: policy, receivedAt: ContinuousClock.now - .seconds(3))
        session.start()
        await probe.finished()
        let report = try #require(probe.report)
        #expect(report.processingMS >= 3000)
        // Nothing was left of the 5 s after the 2 s reserve: the download got no time at all.
        #expect(report.outcome == .timeout)
    }

    /// iOS ends the extension after the attachment is ready but before the app's last touches
    /// finished: the attachment goes out, recorded as attached with `time_will_expire`.
    @Test func expiryWithTheAttachmentReadyDeliversIt() async throws {
        let container = Container()
        defer { container.remove() }
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/png")], body: MediaSamples.png(), declareLength: true))
        defer { host.stop() }
        let client = try makeClient(container, port: try FaultInjector.closedPort(), key: "egk_x")
        let payload = PushPayload(notificationID: "n-4", media: [PushPayload.Media(variant: "original", url: host.url.appendingPathComponent("p"))])
        let probe = SessionProbe()
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let session = makeSession(client: client, payload: payload, notificationID: "n-4", probe: probe, directory: container.url,
                                  finishing: { content in
                                      entered.signal()
                                      release.wait()
                                      return FakeContent(title: "Changed late", attachment: content.attachment)
                                  })
        session.start()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                entered.wait()
                continuation.resume()
            }
        }
        session.expire()
        release.signal()
        await probe.finished()
        #expect(probe.deliveries.count == 1)
        #expect(probe.deliveries.first?.title == "New photo")
        #expect(probe.deliveries.first?.attachment?.hasSuffix(".png") == true)
        let report = try #require(probe.report)
        #expect(report.outcome == .attached && report.timeWillExpire)
    }

    /// Each way a download can end is recorded as what it was.
    @Test func everyOutcomeIsRecordedTruly() async throws {
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: try FaultInjector.closedPort(), key: "egk_x")
        let small = ServiceExtensionPolicy(sizeLimits: [.image: 1000, .gif: 1000, .audio: 1000, .video: 1000], sendBudget: .zero)
        let usual = ServiceExtensionPolicy(sendBudget: .zero)
        let cases: [(FaultInjector.Reply, ServiceExtensionPolicy, Bool, DeliveryOutcome, String)] = [
            (.respond(status: 503, headers: [], body: "busy"), usual, false, .downloadFailed,
             #"{"http_status":503,"kind":"none","source":"network","variant":"original"}"#),
            // A status the server refuses in an event is left out, not the event lost.
            (.respond(status: 999, headers: [], body: "odd"), usual, false, .downloadFailed,
             #"{"kind":"none","source":"network","variant":"original"}"#),
            // An empty body is no file, whatever its type says.
            (.bytes(status: 200, headers: [("Content-Type", "image/jpeg")], body: [], declareLength: true), usual, false,
             .downloadFailed, #"{"kind":"none","source":"network","variant":"original"}"#),
            (.bytes(status: 200, headers: [("Content-Type", "image/jpeg")], body: MediaSamples.jpeg(5000), declareLength: true), small, false,
             .tooLarge, #"{"bytes":5000,"kind":"none","variant":"original"}"#),
            // A declared size beyond what the server takes in an event is left out, not the event lost.
            (.stall(status: 200, headers: [("Content-Type", "image/jpeg")], body: [], declaredLength: 10_000_000_000_000_000), usual, false,
             .tooLarge, #"{"kind":"none","variant":"original"}"#),
            (.bytes(status: 200, headers: [], body: MediaSamples.filler(64), declareLength: true), usual, false,
             .unsupportedFormat, #"{"kind":"none","variant":"original"}"#),
            // iOS refuses the file when the attachment is made.
            (.bytes(status: 200, headers: [("Content-Type", "image/gif")], body: Array("GIF89a".utf8) + MediaSamples.filler(100),
                    declareLength: true), usual, true, .unsupportedFormat,
             #"{"bytes":106,"format":"gif","kind":"none","source":"network","variant":"original"}"#),
        ]
        for (index, (reply, policy, attachFails, outcome, attachment)) in cases.enumerated() {
            let host = try FaultInjector(reply: reply)
            defer { host.stop() }
            let id = "n-outcome-\(index)"
            let payload = PushPayload(notificationID: id, media: [PushPayload.Media(variant: "original", url: host.url.appendingPathComponent("f"))])
            let probe = SessionProbe()
            let session = makeSession(client: client, payload: payload, notificationID: id, probe: probe, directory: container.url,
                                      policy: policy, attach: { media, content in
                                          if attachFails { throw CocoaError(.fileReadCorruptFile) }
                                          return FakeContent(title: content.title, attachment: media.file.lastPathComponent)
                                      })
            session.start()
            await probe.finished()
            #expect(probe.deliveries == [FakeContent(title: "New photo")], "\(outcome)")
            let event = try queuedDelivered(container, notificationID: id)
            #expect(event["outcome"] as? String == outcome.rawValue)
            var recorded = try #require(event["attachment"] as? [String: Any])
            recorded["download_ms"] = nil
            #expect(try canonical(recorded) == attachment, "\(outcome)")
        }
    }
}
