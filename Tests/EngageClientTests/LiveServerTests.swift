import ClientTestSupport
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

/// A wall clock a test sets, and the time since boot beside it: `advance` lets time pass (both
/// move), `jump` sets the wall clock (it alone moves), `reboot` starts another boot. Backoff and
/// claims read it; nothing waits for it.
final class TestClock: @unchecked Sendable {
    // Guards the three.
    private let lock = NSLock()
    private var current: Date
    private var uptime: TimeInterval = 1_000
    private var boot = UUID().uuidString.lowercased()

    init(_ start: Date = Date()) { current = start }

    var now: Date { lock.withLock { current } }

    var bootClock: BootClock {
        BootClock(bootID: { [self] in lock.withLock { boot } }, sinceBoot: { [self] in lock.withLock { uptime } })
    }

    func advance(by seconds: TimeInterval) {
        lock.withLock {
            current += seconds
            uptime += seconds
        }
    }

    func jump(by seconds: TimeInterval) {
        lock.withLock { current += seconds }
    }

    func reboot() {
        lock.withLock {
            boot = UUID().uuidString.lowercased()
            uptime = 30
        }
    }
}

func makeClient(_ container: Container, port: Int, key: String, drops: DropLog? = nil, clock: TestClock? = nil,
                _ configure: (inout EngageClient.Configuration) -> Void = { _ in }) throws -> EngageClient {
    var configuration = EngageClient.Configuration(
        endpoint: URL(string: "http://127.0.0.1:\(port)")!, ingestKey: key,
        containerDirectory: container.url, deviceID: "dev-test-1")
    configure(&configuration)
    return try EngageClient(configuration: configuration, now: { clock?.now ?? Date() }, bootClock: clock?.bootClock ?? .system) { drops?.record($0) }
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
        let clock = TestClock()
        let survivor = try makeClient(container, port: server.port, key: key, clock: clock) {
            $0.claimLease = .seconds(1)
            $0.requestTimeout = .seconds(1)
        }
        var ids: [UUID] = []
        for number in 0..<4 {
            ids.append(try survivor.recordExpanded(notificationID: "n\(number)", category: "new_photo"))
        }

        // The sender that will be "killed": claims, posts, and never completes.
        let dying = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 1)
        let claims = dying.claim(maxEvents: 10, now: clock.now).claims
        #expect(claims.flatMap(\.events).count == 4)
        // As a client sends them: without what the queue keeps beside each event.
        let body = "[" + EventsAsSent(claims.flatMap(\.events).map(\.json), now: nil).lines.joined(separator: ",") + "]"
        let response = try await server.post(body, key: key)
        #expect(response.text == #"{"accepted":4,"duplicates":0,"rejected":[]}"#)

        let early = await survivor.flush(budget: .seconds(2))
        #expect(early == .init(ending: .drained, requests: 0))
        #expect(survivor.pending.claimedFiles == 1)

        clock.advance(by: 1.1)
        let late = await survivor.flush(budget: .seconds(5))
        // Resent once; a request is bounded by the 1 s lease in real time, so on a busy machine
        // one that times out is sent again: how many requests it took is not what this checks.
        #expect(late.ending == .drained && late.requests >= 1, "\(late)")
        // The dead sender never reported them: the server's duplicates are its send arriving,
        // delivered (DeliveredCountTests).
        #expect(late.accepted == 4 && late.duplicates == 0 && late.dropped == 0, "\(late)")
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

        // One bad event among good ones: 200, only it is dropped.
        let client = try makeClient(container, port: server.port, key: key, drops: drops)
        let good = try client.recordAction(notificationID: "n1", category: "new_photo", actionID: "like")
        let bad = try client.recordAction(notificationID: "n1", category: "new_photo",
                                          actionID: String(repeating: "x", count: 65))
        let partial = await client.flush(budget: .seconds(5))
        #expect(partial == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 0, dropped: 1))
        guard drops.all.count == 1, case let .rejected(field, problem) = drops.all[0].reason else {
            Issue.record("expected a rejection, got \(drops.all)")
            await server.stop()
            return
        }
        #expect(field == "action_id")
        #expect(!problem.isEmpty)
        #expect(drops.all[0].eventIDs == [bad.uuidString.lowercased()])
        #expect(try await stored(server, [good, bad]) == 1)

        // An event the server cannot parse (nested deeper than it takes) among good ones: the
        // request is one event per line, so it alone is rejected, by its index.
        var nested = JSONValue.string("deep")
        for _ in 0..<40 { nested = .array([nested]) }
        let before = try client.recordAction(notificationID: "n2", category: "new_photo", actionID: "like")
        let deep = try client.recordAction(notificationID: "n2", category: "new_photo", actionID: "reply",
                                           properties: ["nested": nested])
        let after = try client.recordExpanded(notificationID: "n2", category: "new_photo")
        let mixed = await client.flush(budget: .seconds(5))
        #expect(mixed == .init(ending: .drained, requests: 1, accepted: 2, duplicates: 0, dropped: 1))
        #expect(drops.all.count == 2 && drops.all.last?.eventIDs == [deep.uuidString.lowercased()], "\(drops.all)")
        #expect(try await stored(server, [before, deep, after]) == 2)

        // Nothing valid at all: 400 no-valid-events, which lists each event as a 200 would; each
        // is dropped as rejected, with its own field.
        let worse = try client.recordAction(notificationID: "n1", category: "new_photo", actionID: "")
        let worst = try client.recordAction(notificationID: "n3", category: "new_photo", actionID: "reply",
                                            properties: ["nested": nested])
        let none = await client.flush(budget: .seconds(5))
        #expect(none == .init(ending: .drained, requests: 1, dropped: 2))
        let lastTwo = drops.all.suffix(2)
        #expect(lastTwo.map(\.eventIDs) == [[worse.uuidString.lowercased()], [worst.uuidString.lowercased()]])
        guard lastTwo.count == 2, case let .rejected(field, _) = lastTwo.first!.reason, case .rejected = lastTwo.last!.reason else {
            Issue.record("expected two rejections, got \(lastTwo)")
            await server.stop()
            return
        }
        #expect(field == "action_id")
        #expect(client.dropCounts.rejected == 4 && client.dropCounts.refused == 0)
        #expect(client.pending == (0, 0, 0))
        await server.stop()
    }

    /// What an app can get wrong in its configuration and mend in an update.
    enum Misconfiguration: CaseIterable {
        /// A key the server refuses (unknown, revoked, of another role): 401.
        case unknownKey
        /// An endpoint whose path the server does not serve (a proxy that strips or adds a
        /// prefix, a typo): 404.
        case pathNotServed
    }

    /// Refused for the configuration, not for the events: they wait with the backoff, and an app
    /// update that mends it finds them in the app group's queue and sends them. They were dropped
    /// as refused before.
    @Test(arguments: Misconfiguration.allCases)
    func eventsRefusedForTheConfigurationWaitForAMendedOne(wrong: Misconfiguration) async throws {
        let server = try TestServer()
        let key = try await server.key()
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let clock = TestClock()

        let misconfigured = try makeClient(container, port: server.port, key: wrong == .unknownKey ? "egk_unknown" : key,
                                           drops: drops, clock: clock) {
            if wrong == .pathNotServed { $0.endpoint = URL(string: "http://127.0.0.1:\(server.port)/engage")! }
            $0.retry = RetryPolicy(initialDelay: .seconds(60), maxDelay: .seconds(300), retryAfterJitter: .seconds(1))
        }
        let kept = try misconfigured.recordExpanded(notificationID: "n1", category: "new_photo")
        let refused = await misconfigured.flush(budget: .seconds(5))
        guard case .backingOff = refused.ending else {
            Issue.record("expected a backoff, got \(refused)")
            await server.stop()
            return
        }
        #expect(refused.requests == 1 && refused.dropped == 0, "\(refused)")
        #expect(drops.all.isEmpty, "\(drops.all)")
        #expect(misconfigured.pending.events == 1)
        #expect(misconfigured.dropCounts == DropCounts())

        clock.advance(by: 301)
        let updated = try makeClient(container, port: server.port, key: key, drops: drops, clock: clock)
        let sent = await updated.flush(budget: .seconds(5))
        #expect(sent == .init(ending: .drained, requests: 1, accepted: 1), "\(sent)")
        #expect(drops.all.isEmpty)
        #expect(try await stored(server, [kept]) == 1)
        await server.stop()
    }

    /// 429 and 503 come from the fault injector (the real server answers them only under
    /// overload or without its database); the events then go to the real server. The wall
    /// clock is the test's: the client waits for it, the test moves it, nothing sleeps.
    @Test(arguments: [429, 503])
    func retryAfterIsObeyedAndTheSameEventsAreSentLater(status: Int) async throws {
        let injector = try FaultInjector(reply: .respond(
            status: status, headers: [("Retry-After", "120"), ("Content-Type", "application/problem+json")],
            body: #"{"type":"https://engage.dev/problems/database-unavailable","status":503}"#))
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let clock = TestClock()
        let start = clock.now
        let busy = try makeClient(container, port: injector.port, key: "egk_x", clock: clock) {
            $0.retry = RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .seconds(300), retryAfterJitter: .milliseconds(100))
        }
        let ids = [
            try busy.recordDisplayed(notificationID: "n1", category: "c", presentation: .rich, attachmentKind: .gif),
            try busy.recordDisplayed(notificationID: "n2", category: "c", presentation: .plain, attachmentKind: .none),
        ]
        var expectedHits = 0
        for _ in 0..<3 {
            let report = await busy.flush(budget: .seconds(30))
            expectedHits += 1
            #expect(injector.hits.count == expectedHits)
            guard case let .backingOff(until) = report.ending else {
                Issue.record("expected to end backing off, got \(report.ending)")
                return
            }
            // Retry-After plus at most the jitter, from the test's clock. The retry state is
            // stored in whole milliseconds (rounded up), so the wait may exceed the jitter by
            // up to 1 ms; below 120 s only by the Date's rounding (nanoseconds), never by a ms.
            let wait = until.timeIntervalSince(clock.now)
            #expect(wait >= 120 - 1e-6 && wait <= 120.101, "\(wait)")
            // Before the time nothing is sent (the wait left is longer than this budget).
            clock.advance(by: 119)
            #expect(await busy.flush(budget: .milliseconds(500)).requests == 0)
            #expect(injector.hits.count == expectedHits)
            clock.advance(by: 1.2)
        }
        #expect(clock.now.timeIntervalSince(start) > 3 * 120)
        let sentIDs = try injector.hits.map { hit -> [String] in
            #expect(hit.headers["content-encoding"] == "gzip")
            #expect(hit.headers["authorization"] == "Bearer egk_x")
            #expect(hit.headers["content-type"] == "application/x-ndjson")
            // One event per line.
            return try GzipTests.gunzip(hit.body).split(separator: 0x0A).compactMap { line in
                (try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])?["event_id"] as? String
            }
        }
        #expect(sentIDs.allSatisfy { $0 == ids.map { $0.uuidString.lowercased() } })
        #expect(busy.pending.events == 2)

        let server = try TestServer()
        let healthy = try makeClient(container, port: server.port, key: try await server.key(), clock: clock)
        #expect(await healthy.flush(budget: .seconds(5)).accepted == 2)
        #expect(try await stored(server, ids) == 2)
        await server.stop()
    }

    /// A network in between answers with a 4xx of its own (a firewall's or portal's 403 page, a
    /// proxy's 407, a CDN's 421 or 425): engage refused nothing, so the events wait and are sent
    /// once engage answers, as after a 200 that is not engage's answer.
    @Test(arguments: [403, 407, 421, 425])
    func aFourHundredThatIsNotEngagesKeepsTheEvents(status: Int) async throws {
        let portal = try FaultInjector(reply: .respond(status: status, headers: [("Content-Type", "text/html")],
                                                       body: "<html><body>Blocked by network policy</body></html>"))
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let clock = TestClock()
        let client = try makeClient(container, port: portal.port, key: "egk_x", drops: drops, clock: clock)
        let ids = try (0..<3).map { try client.recordExpanded(notificationID: "n\($0)", category: "new_photo") }
        let blocked = await client.flush(budget: .seconds(5))
        portal.stop()
        #expect(blocked.requests >= 1)
        #expect(blocked.dropped == 0)
        #expect(drops.all.isEmpty, "dropped: \(drops.all)")
        #expect(client.pending.events == 3)

        clock.advance(by: 3600)
        let server = try TestServer()
        let online = try makeClient(container, port: server.port, key: try await server.key(), clock: clock)
        #expect(await online.flush(budget: .seconds(10)).accepted == 3)
        #expect(try await stored(server, ids) == 3)
        await server.stop()
    }

    /// A proxy's body limit (its own 413 page, not engage's problem) halves the batch as engage's
    /// 413 does; a single segment it still refuses waits with the backoff instead of being dropped.
    @Test func aProxysBodyLimitHalvesTheBatchAndDropsNothing() async throws {
        let proxy = try FaultInjector(reply: .respond(status: 413, headers: [("Content-Type", "text/html")],
                                                      body: "<html><body>413 Request Entity Too Large</body></html>"))
        defer { proxy.stop() }
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let clock = TestClock()
        let client = try makeClient(container, port: proxy.port, key: "egk_x", drops: drops, clock: clock)
        _ = try client.recordExpanded(notificationID: "n1", category: "new_photo")
        let first = await client.flush(budget: .seconds(5))
        #expect(first.requests == 1)
        // A second segment (the first was the head when it was claimed): two claims together.
        _ = try client.recordExpanded(notificationID: "n2", category: "new_photo")
        clock.advance(by: 3600)
        let second = await client.flush(budget: .seconds(5))
        #expect(second.requests == 2, "the batch of two segments was not halved")
        #expect(second.dropped == 0)
        #expect(drops.all.isEmpty, "dropped: \(drops.all)")
        #expect(client.pending.events == 2)
    }

    /// engage's 400 `bad-gzip` for a body something on the way inflated (keeping its
    /// `Content-Encoding`): the same events go again at once, uncompressed, and none is dropped.
    @Test func aBodyInflatedOnTheWayIsSentAgainUncompressed() async throws {
        let proxy = try FaultInjector(reply: .answer { hit in
            if hit.headers["content-encoding"] == "gzip" {
                return (400, [("Content-Type", "application/problem+json")],
                        #"{"type":"https://engage.dev/problems/bad-gzip","title":"Bad request","status":400}"#)
            }
            let lines = hit.body.split(separator: UInt8(ascii: "\n")).count
            return (200, [("Content-Type", "application/json")], #"{"accepted":\#(lines),"duplicates":0,"rejected":[]}"#)
        })
        defer { proxy.stop() }
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let client = try makeClient(container, port: proxy.port, key: "egk_x", drops: drops)
        for notification in ["n1", "n2", "n3"] { _ = try client.recordExpanded(notificationID: notification, category: "new_photo") }

        let report = await client.flush(budget: .seconds(10))

        #expect(report == .init(ending: .drained, requests: 2, accepted: 3, duplicates: 0, dropped: 0))
        let hits = proxy.hits
        #expect(hits.map { $0.headers["content-encoding"] } == ["gzip", nil])
        #expect(hits.last.map { $0.body.split(separator: UInt8(ascii: "\n")).count } == 3)
        #expect(drops.all.isEmpty, "dropped: \(drops.all)")
        #expect(client.pending.events == 0)

        // The client remembers: the next flush's one request goes uncompressed.
        _ = try client.recordExpanded(notificationID: "n4", category: "new_photo")
        #expect(await client.flush(budget: .seconds(10)) == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 0, dropped: 0))
        #expect(proxy.hits.map { $0.headers["content-encoding"] } == ["gzip", nil, nil])
    }

    /// engage's 400 for a clock header it does not read (a server that reads them otherwise):
    /// nothing was stored, so the events wait with the backoff instead of being dropped.
    @Test(arguments: ["bad-sent-at", "bad-occurred-at-clock"])
    func aClockHeaderTheServerDoesNotReadKeepsTheEvents(problem: String) async throws {
        let server = try FaultInjector(reply: .respond(
            status: 400, headers: [("Content-Type", "application/problem+json")],
            body: #"{"type":"https://engage.dev/problems/\#(problem)","title":"Bad request","status":400}"#))
        defer { server.stop() }
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let client = try makeClient(container, port: server.port, key: "egk_x", drops: drops) {
            $0.retry = RetryPolicy(initialDelay: .seconds(120), maxDelay: .seconds(300), retryAfterJitter: .milliseconds(100))
        }
        _ = try client.recordExpanded(notificationID: "n1", category: "new_photo")
        _ = try client.recordAction(notificationID: "n1", category: "new_photo", actionID: "like")

        let report = await client.flush(budget: .seconds(10))

        #expect(server.hits.count == 1)
        guard case .backingOff = report.ending else {
            Issue.record("expected to end backing off, got \(report.ending)")
            return
        }
        #expect(report.dropped == 0)
        #expect(drops.all.isEmpty, "dropped: \(drops.all)")
        #expect(client.dropCounts == DropCounts())
        #expect(client.pending.events == 2)
    }

    /// The wall clock set back a day after a 429: the recorded backoff lies further ahead than
    /// any this policy gives, so it is ignored instead of stalling the queue for a day.
    @Test func aClockSetBackDoesNotStallSending() async throws {
        let injector = try FaultInjector(reply: .respond(status: 429, headers: [("Retry-After", "60")], body: ""))
        let container = Container()
        defer { container.remove() }
        let clock = TestClock()
        let client = try makeClient(container, port: injector.port, key: "egk_x", clock: clock)
        let id = try client.recordExpanded(notificationID: "n1", category: "new_photo")
        guard case .backingOff = await client.flush(budget: .seconds(10)).ending else {
            Issue.record("expected a backoff")
            return
        }
        injector.stop()
        // A claim stamped now that is still held, as if its sender hung: also a day "ahead".
        let stuck = try makeClient(container, port: injector.port, key: "egk_x", clock: clock)
        _ = try stuck.recordExpanded(notificationID: "n2", category: "new_photo")
        let claimed = stuck.queue.claim(maxEvents: 1, now: clock.now)
        #expect(claimed.claims.count == 1)
        clock.jump(by: -86_400)

        let server = try TestServer()
        let online = try makeClient(container, port: server.port, key: try await server.key(), clock: clock)
        let report = await online.flush(budget: .seconds(10))
        #expect(report.ending == .drained)
        #expect(report.accepted == 2)
        #expect(try await stored(server, [id]) == 1)
        #expect(online.pending == (0, 0, 0))
        await server.stop()
    }

    /// A network that redirects (a captive portal) gets nothing: the redirect is not followed,
    /// and the events wait for a real answer.
    @Test func redirectsAreNotFollowed() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let portal = try FaultInjector(reply: .respond(status: 302, headers: [("Location", "http://127.0.0.1:\(server.port)/v1/events")], body: ""))
        defer { portal.stop() }
        let container = Container()
        defer { container.remove() }
        let clock = TestClock()
        let client = try makeClient(container, port: portal.port, key: key, clock: clock)
        let id = try client.recordExpanded(notificationID: "n1", category: "new_photo")
        let report = await client.flush(budget: .seconds(5))
        #expect(report.requests == 1)
        #expect(report.accepted == 0)
        #expect(portal.hits.count == 1)
        #expect(try await stored(server, [id]) == 0)
        #expect(client.pending.events == 1)
        await server.stop()
    }

    /// A captive portal answers 200 with its login page: that stores nothing, the events stay,
    /// and once the network is real they arrive once.
    @Test func aCaptivePortalsTwoHundredKeepsTheEvents() async throws {
        let portal = try FaultInjector(reply: .respond(status: 200, headers: [("Content-Type", "text/html")],
                                                       body: "<html><body>Accept the terms to continue</body></html>"))
        let container = Container()
        defer { container.remove() }
        let clock = TestClock()
        let drops = DropLog()
        let client = try makeClient(container, port: portal.port, key: "egk_x", drops: drops, clock: clock)
        let ids = try (0..<3).map { try client.recordExpanded(notificationID: "n\($0)", category: "new_photo") }
        let report = await client.flush(budget: .seconds(5))
        #expect(report.requests == 1)
        #expect(report.accepted == 0 && report.dropped == 0)
        guard case .backingOff = report.ending else {
            Issue.record("expected a backoff, got \(report.ending)")
            return
        }
        #expect(client.pending.events == 3)
        #expect(drops.all.isEmpty)
        portal.stop()

        clock.advance(by: 600)
        let server = try TestServer()
        let online = try makeClient(container, port: server.port, key: try await server.key(), clock: clock)
        #expect(await online.flush(budget: .seconds(5)).accepted == 3)
        #expect(try await stored(server, ids) == 3)
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
        // The budget, not the server, ended the wait: no backoff for the next flush.
        #expect(report.ending == .budgetExhausted)
        #expect(injector.hits.count == 1)
        // Cancelled mid-request: back in line, not stuck in a claim until the lease.
        #expect(client.pending.events == 3)
        #expect(client.pending.claimedFiles == 0)
    }

    /// A server that takes connections and never answers within the request timeout (a commit
    /// stalled on its database) is sent to again only after a growing wait: resending at once,
    /// at every request timeout, would keep it down (every device doing so). Also when the
    /// flush's budget is the request timeout, as `run()`'s is: its request gets a little less than
    /// the whole timeout, and that silence is the server's all the same.
    /// (The request timeout is 300 ms against a 2 s budget, and 3 s as the budget itself: a tenth
    /// of it, 300 ms, is what the flush may spend before the request without its silence
    /// counting less, time enough on a busy machine.)
    @Test(arguments: [(Duration.seconds(2), Duration.milliseconds(300)), (.seconds(3), .seconds(3))])
    func aServerThatDoesNotAnswerIsBackedOffFrom(budget: Duration, requestTimeout: Duration) async throws {
        let injector = try FaultInjector(reply: .hang)
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: injector.port, key: "egk_x") {
            $0.requestTimeout = requestTimeout
            $0.retry = RetryPolicy(initialDelay: .seconds(60), maxDelay: .seconds(300))
        }
        try client.recordExpanded(notificationID: "n1", category: "c")
        let report = await client.flush(budget: budget)
        guard case .backingOff = report.ending else {
            Issue.record("expected to end backing off, got \(report.ending)")
            return
        }
        #expect(report.requests == 1)
        #expect(injector.hits.count == 1)
        #expect(await client.flush(budget: .seconds(1)).requests == 0)
        #expect(client.pending.events == 1)
    }

    /// A refused connection is retried with the backoff until the budget runs out, and the flush
    /// returns by it. The budget is 2 s against backoffs of 100-400 ms, so that a machine too busy
    /// to refuse a connection quickly still makes a second attempt (with 1 s, the first one took
    /// it all beside the suite run twice at once); the return is allowed half a second of
    /// scheduling past the budget, not a second attempt's worth.
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
        let report = await client.flush(budget: .seconds(2))
        #expect(clock.now - start < .milliseconds(2500))
        #expect(report.requests >= 2)
        #expect(client.pending.events == 1)
    }

    @Test func assignmentsAreEmptyWithoutExperiments() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: server.port, key: try await server.key())
        #expect(try await client.assignments(for: "dev-1") == [])
        #expect(try await client.assignments(forDevices: ["dev-1", "dev-2"]) == [:])
        await server.stop()
    }

    /// A '+' in a device id (base64, `user+tag`) reached the server as a space, forms' way, and the
    /// device got another id's arm: one device's arm is the same fetched alone or in a batch.
    @Test func aDeviceIDWithAPlusGetsItsOwnArm() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let admin = try await server.key(role: .admin)
        let definition = #"{"id":"plus-ids","app_id":"app-1","arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},{"name":"treatment","strategy":"adaptive","weight":0.5}],"primary_metric":"open","categories":["a+b"],"schedule":"0 * * * *"}"#
        let auth = [("Authorization", "Bearer \(admin)")]
        #expect(try await server.request("POST", "/v1/experiments", headers: auth + [("Content-Type", "application/json")],
                                         body: Array(definition.utf8)).status == 201)
        #expect(try await server.request("POST", "/v1/experiments/plus-ids/start", headers: auth).status == 200)
        let client = try makeClient(container, port: server.port, key: try await server.key())
        let devices = (0..<24).map { "u\($0)+tag/x==" }
        let batch = try await client.assignments(forDevices: devices, category: "a+b")
        for device in devices {
            let alone = try await client.assignments(for: device, category: "a+b")
            #expect(alone.count == 1 && alone == batch[device], "\(device): \(alone) alone, \(batch[device] ?? []) in a batch")
        }
        await server.stop()
    }

    @Test func assignmentsThatCannotBeFetchedAreAnErrorNotAnEmptyAnswer() async throws {
        let portal = try FaultInjector(reply: .respond(status: 200, headers: [], body: "<html></html>"))
        defer { portal.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: portal.port, key: "egk_x")
        await #expect(throws: AssignmentsError(status: 200, detail: "the answer is not an assignments document")) {
            try await client.assignments(for: "dev 1/ü")
        }
        #expect(portal.hits.map(\.target) == ["/v1/assignments?device_id=dev%201/%C3%BC"])
        let down = try makeClient(container, port: try FaultInjector.closedPort(), key: "egk_x")
        await #expect(throws: AssignmentsError.self) { try await down.assignments(forDevices: ["a"]) }
    }
}
