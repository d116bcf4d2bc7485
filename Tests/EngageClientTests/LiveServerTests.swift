import EngageAPI
import Foundation
import Postgres
import Testing
import TestSupport
@testable import EngageClient

/// Collects what the client reports through `onDrop`.
final class DropLog: @unchecked Sendable {
    // Guards `entries`; `onDrop` may be called from any task.
    private let lock = NSLock()
    private var entries: [EngageClient.DroppedEvents] = []

    func record(_ drop: EngageClient.DroppedEvents) {
        lock.lock()
        entries.append(drop)
        lock.unlock()
    }

    var all: [EngageClient.DroppedEvents] {
        lock.lock()
        defer { lock.unlock() }
        return entries
    }
}

func makeClient(_ container: Container, port: Int, key: String, drops: DropLog? = nil,
                _ configure: (inout EngageClient.Configuration) -> Void = { _ in }) throws -> EngageClient {
    var configuration = EngageClient.Configuration(
        endpoint: URL(string: "http://127.0.0.1:\(port)")!, ingestKey: key,
        containerDirectory: container.url, deviceID: "dev-test-1")
    configure(&configuration)
    return try EngageClient(configuration: configuration) { drops?.record($0) }
}

/// Rows stored for these ids.
func stored(_ server: TestServer, _ ids: [UUID]) async throws -> Int {
    try await server.count("SELECT count(*) FROM events WHERE event_id = ANY(\(ids))")
}

/// Records one event of every type and shape, returning their ids.
func recordEveryType(_ client: EngageClient) throws -> [UUID] {
    let arm = ExperimentArm(id: "rich-media", arm: "thumbnail", probability: 0.5)
    return [
        try client.recordSent(notificationID: "n1", category: "new_photo", media: [
            MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 2_483_112, width: 3024, height: 4032),
            MediaVariant(variant: "clip", kind: .video, format: .mp4, bytes: 900_000, durationMS: 4000),
        ], strategy: .thumbnail, payloadBytes: 1893, experiment: arm, deviceID: "dev-other",
           properties: ["campaign": "weekly", "nested": ["list": [1, 2.5, true, nil]]]),
        try client.recordSent(notificationID: "n0", category: "plain", media: []),
        try client.recordDelivered(
            notificationID: "n1", category: "new_photo",
            attachment: AttachmentTelemetry(kind: .image, format: .jpeg, bytes: 48210, source: .network,
                                            downloadMS: 412, variant: "thumbnail"),
            outcome: .attached, processingMS: 587, timeWillExpire: false, network: .wifi, strategy: .thumbnail,
            experiment: arm),
        try client.recordDelivered(notificationID: "n2", category: "new_photo", attachment: .none, outcome: .timeout,
                                   processingMS: 29_800, timeWillExpire: true, network: .cellular),
        try client.recordDisplayed(notificationID: "n1", category: "new_photo", presentation: .rich,
                                   attachmentKind: .image, experiment: arm),
        try client.recordDisplayed(notificationID: "n2", category: "new_photo", presentation: .plain, attachmentKind: .none),
        try client.recordExpanded(notificationID: "n1", category: "new_photo", experiment: arm,
                                  properties: ["content_extension": "PhotoPreview"]),
        try client.recordAction(notificationID: "n1", category: "new_photo", actionID: "like"),
        try client.recordAction(notificationID: "n1", category: "new_photo", actionID: "reply", textInputLength: 42),
        try client.recordAction(notificationID: "n1", category: "new_photo", actionID: AppleActionIdentifier.open),
        try client.recordAction(notificationID: "n2", category: "new_photo", actionID: AppleActionIdentifier.dismiss),
    ]
}

@Suite("EngageClient against a live server", .serialized)
struct LiveServerTests {
    @Test(arguments: [true, false])
    func everyEventTypeIsAccepted(gzip: Bool) async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops) {
            $0.gzip = gzip
        }
        let ids = try recordEveryType(client)
        let report = await client.flush(budget: .seconds(10))
        #expect(report == .init(ending: .drained, requests: 1, accepted: ids.count, duplicates: 0, dropped: 0))
        #expect(drops.all.isEmpty)
        #expect(try await stored(server, ids) == ids.count)
        #expect(try await server.count("SELECT count(*) FROM events WHERE type = 'action' AND payload->>'text_input_length' = '42'") == 1)
        #expect(client.pending == (0, 0, 0))
        await server.stop()
    }

    @Test func batchesFollowBatchSize() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: server.port, key: try await server.key()) { $0.batchSize = 4 }
        let ids = try recordEveryType(client)
        let report = await client.flush(budget: .seconds(10))
        #expect(report.requests == 3)
        #expect(report.accepted == ids.count)
        await server.stop()
    }

    /// The first client records while nothing listens on its port (an extension with no
    /// network, say), then exits. The server comes up on that port, and a second instance on the
    /// same container, as another process would, sends what the first left: each event once.
    @Test func eventsRecordedWhileTheServerIsDownArriveExactlyOnce() async throws {
        let port = try FaultInjector.closedPort()
        let container = Container()
        defer { container.remove() }
        var ids: [UUID] = []
        do {
            let offline = try makeClient(container, port: port, key: "egk_not_yet") {
                $0.retry = RetryPolicy(initialDelay: .milliseconds(200), maxDelay: .seconds(1))
            }
            for number in 0..<5 {
                ids.append(try offline.recordDisplayed(notificationID: "n\(number)", category: "new_photo",
                                                       presentation: .rich, attachmentKind: .image))
            }
            let report = await offline.flush(budget: .milliseconds(800))
            #expect(report.accepted == 0)
            #expect(report.requests >= 1)
            #expect(offline.pending.events == 5)
            #expect(offline.pending.claimedFiles == 0)
        }

        let server = try TestServer { $0.http.port = port }
        let key = try await server.key()
        let online = try makeClient(container, port: port, key: key) {
            $0.retry = RetryPolicy(initialDelay: .milliseconds(200), maxDelay: .seconds(1))
        }
        let report = await online.flush(budget: .seconds(10))
        #expect(report.ending == .drained)
        #expect(report.accepted == 5)
        #expect(report.duplicates == 0)
        #expect(try await stored(server, ids) == 5)
        #expect(try await server.count("SELECT count(*) FROM events") == 5)
        #expect(online.pending == (0, 0, 0))

        let again = await online.flush(budget: .seconds(2))
        #expect(again == .init(ending: .drained, requests: 0))
        #expect(try await server.count("SELECT count(*) FROM events") == 5)
        await server.stop()
    }

    /// A sender claims files, gets them stored, and dies before deleting them. Nobody touches
    /// its claim until the lease runs out; then another process resends it, and the server's
    /// idempotency keeps the count at one row per event.
    @Test func aKilledSendersClaimIsReclaimedAfterItsLease() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let container = Container()
        defer { container.remove() }
        let survivor = try makeClient(container, port: server.port, key: key) {
            $0.claimLease = .seconds(1)
            $0.requestTimeout = .seconds(1)
        }
        var ids: [UUID] = []
        for number in 0..<4 {
            ids.append(try survivor.recordExpanded(notificationID: "n\(number)", category: "new_photo"))
        }

        // The sender that will be "killed": claims, posts, and never completes.
        let dying = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 1)
        let claims = dying.claim(maxEvents: 10).claims
        #expect(claims.flatMap(\.events).count == 4)
        let body = "[" + claims.flatMap(\.events).map(\.json).joined(separator: ",") + "]"
        let response = try await server.post(body, key: key)
        #expect(response.text == #"{"accepted":4,"duplicates":0,"rejected":[]}"#)

        let early = await survivor.flush(budget: .seconds(2))
        #expect(early == .init(ending: .drained, requests: 0))
        #expect(survivor.pending.claimedFiles == 4)

        try await Task.sleep(for: .milliseconds(1100))
        let late = await survivor.flush(budget: .seconds(5))
        #expect(late == .init(ending: .drained, requests: 1, accepted: 0, duplicates: 4, dropped: 0))
        #expect(survivor.pending == (0, 0, 0))
        #expect(try await stored(server, ids) == 4)
        await server.stop()
    }

    @Test func refusedAndRejectedEventsAreDroppedAndReported() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()

        // A key the server does not know: 401, and the batch cannot block the queue.
        let unauthorized = try makeClient(container, port: server.port, key: "egk_unknown", drops: drops)
        let lost = try unauthorized.recordExpanded(notificationID: "n1", category: "new_photo")
        let refused = await unauthorized.flush(budget: .seconds(5))
        #expect(refused == .init(ending: .drained, requests: 1, dropped: 1))
        #expect(drops.all == [.init(reason: .refused(status: 401, problemType: "https://engage.dev/problems/unauthorized"),
                                    eventIDs: [lost.uuidString.lowercased()])])

        // One bad event among good ones: 200, only it is dropped.
        let client = try makeClient(container, port: server.port, key: key, drops: drops)
        let good = try client.recordAction(notificationID: "n1", category: "new_photo", actionID: "like")
        let bad = try client.recordAction(notificationID: "n1", category: "new_photo",
                                          actionID: String(repeating: "x", count: 65))
        let partial = await client.flush(budget: .seconds(5))
        #expect(partial == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 0, dropped: 1))
        guard drops.all.count == 2, case let .rejected(field, problem) = drops.all[1].reason else {
            Issue.record("expected a rejection, got \(drops.all)")
            await server.stop()
            return
        }
        #expect(field == "action_id")
        #expect(!problem.isEmpty)
        #expect(drops.all[1].eventIDs == [bad.uuidString.lowercased()])
        #expect(try await stored(server, [good, bad, lost]) == 1)

        // Nothing valid at all: 400 no-valid-events.
        let worse = try client.recordAction(notificationID: "n1", category: "new_photo", actionID: "")
        let none = await client.flush(budget: .seconds(5))
        #expect(none == .init(ending: .drained, requests: 1, dropped: 1))
        #expect(drops.all.last == .init(reason: .refused(status: 400, problemType: "https://engage.dev/problems/no-valid-events"),
                                        eventIDs: [worse.uuidString.lowercased()]))
        #expect(client.pending == (0, 0, 0))
        await server.stop()
    }

    /// 429 and 503 come from the fault injector (the real server answers them only under
    /// overload or without its database); the events then go to the real server.
    @Test(arguments: [429, 503])
    func retryAfterIsObeyedAndTheSameEventsAreSentLater(status: Int) async throws {
        let injector = try FaultInjector(reply: .respond(
            status: status, headers: [("Retry-After", "1"), ("Content-Type", "application/problem+json")],
            body: #"{"type":"https://engage.dev/problems/database-unavailable","status":503}"#))
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let busy = try makeClient(container, port: injector.port, key: "egk_x") {
            $0.retry = RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(100),
                                   retryAfterJitter: .milliseconds(100))
        }
        let ids = [
            try busy.recordDisplayed(notificationID: "n1", category: "c", presentation: .rich, attachmentKind: .gif),
            try busy.recordDisplayed(notificationID: "n2", category: "c", presentation: .plain, attachmentKind: .none),
        ]
        let report = await busy.flush(budget: .milliseconds(2600))
        let hits = injector.hits
        #expect(hits.count == 3)
        for (earlier, later) in zip(hits, hits.dropFirst()) {
            #expect(later.at - earlier.at >= .seconds(1))
            #expect(later.at - earlier.at < .milliseconds(1300))
        }
        let sentIDs = try hits.map { hit -> [String] in
            #expect(hit.headers["content-encoding"] == "gzip")
            #expect(hit.headers["authorization"] == "Bearer egk_x")
            let events = try JSONSerialization.jsonObject(with: Data(try GzipTests.gunzip(hit.body))) as? [[String: Any]]
            return events?.compactMap { $0["event_id"] as? String } ?? []
        }
        #expect(sentIDs.allSatisfy { $0 == ids.map { $0.uuidString.lowercased() } })
        guard case .backingOff = report.ending else {
            Issue.record("expected to end backing off, got \(report.ending)")
            return
        }
        #expect(busy.pending.events == 2)

        let server = try TestServer()
        let healthy = try makeClient(container, port: server.port, key: try await server.key())
        #expect(await healthy.flush(budget: .seconds(5)).accepted == 2)
        #expect(try await stored(server, ids) == 2)
        await server.stop()
    }

    @Test func flushReturnsWithinItsBudgetWhenTheServerHangs() async throws {
        let injector = try FaultInjector(reply: .hang)
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: injector.port, key: "egk_x")
        for number in 0..<3 {
            try client.recordExpanded(notificationID: "n\(number)", category: "c")
        }
        let clock = ContinuousClock()
        let start = clock.now
        let report = await client.flush(budget: .milliseconds(700))
        let elapsed = clock.now - start
        #expect(elapsed < .milliseconds(900))
        #expect(report.ending == .budgetExhausted)
        #expect(injector.hits.count == 1)
        // Cancelled mid-request: back in line, not stuck in a claim until the lease.
        #expect(client.pending.events == 3)
        #expect(client.pending.claimedFiles == 0)
    }

    @Test func flushReturnsWithinItsBudgetWhileTheServerIsDown() async throws {
        let port = try FaultInjector.closedPort()
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: port, key: "egk_x") {
            $0.retry = RetryPolicy(initialDelay: .milliseconds(100), maxDelay: .milliseconds(400))
        }
        try client.recordExpanded(notificationID: "n1", category: "c")
        let clock = ContinuousClock()
        let start = clock.now
        let report = await client.flush(budget: .seconds(1))
        #expect(clock.now - start < .milliseconds(1200))
        #expect(report.requests >= 2)
        #expect(client.pending.events == 1)
    }

    @Test func assignmentsAreEmptyWithoutExperimentsAndCached() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: server.port, key: try await server.key())
        #expect(await client.assignments() == [])
        #expect(client.cachedAssignments() == [])
        #expect(FileManager.default.fileExists(atPath: container.url.appendingPathComponent("EngageClient/assignments.json").path))
        await server.stop()
    }

    /// `/v1/assignments` is not built yet: the fault injector answers in the designed shape.
    @Test func assignmentsAreFetchedThenServedFromTheCacheOffline() async throws {
        let body = #"{"assignments":[{"experiment":"rich-media","arm":"thumbnail","strategy":"thumbnail","probability":0.5}]}"#
        let injector = try FaultInjector(reply: .respond(status: 200, headers: [("Content-Type", "application/json")], body: body))
        let container = Container()
        defer { container.remove() }
        let expected = [Assignment(experiment: "rich-media", arm: "thumbnail", strategy: "thumbnail", probability: 0.5)]

        let app = try makeClient(container, port: injector.port, key: "egk_x")
        #expect(await app.assignments(for: "dev 1/ü") == expected)
        #expect(injector.hits.map(\.target) == ["/v1/assignments?device_id=dev%201/%C3%BC"])
        #expect(injector.hits.first?.headers["authorization"] == "Bearer egk_x")
        injector.stop()

        // The extension, offline: a fresh cache is used without asking...
        let fresh = try makeClient(container, port: injector.port, key: "egk_x")
        #expect(await fresh.assignments(for: "dev 1/ü") == expected)
        #expect(injector.hits.count == 1)
        // ...and a stale one when the server cannot be reached.
        let stale = try makeClient(container, port: injector.port, key: "egk_x") { $0.assignmentsTTL = .zero }
        #expect(await stale.assignments(for: "dev 1/ü", timeout: .milliseconds(500)) == expected)
        #expect(stale.cachedAssignments(for: "dev 1/ü").first?.attachmentStrategy == .thumbnail)
        #expect(stale.cachedAssignments(for: "another device") == [])
    }
}
