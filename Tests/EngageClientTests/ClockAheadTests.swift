import Foundation
import Testing
import TestSupport
@testable import EngageClient
import EngageNotificationService

/// A device clock running ahead: the client says what its clock reads as it sends, and the server
/// moves the events back instead of rejecting them as in the future (a real server and database).
@Suite("EngageClient: a clock running ahead", .serialized)
struct ClockAheadTests {
    /// Rows stored for these ids whose `occurred_at` lies within a minute of the database's clock
    /// moved by `offset` seconds.
    static func storedNearNow(_ server: TestServer, _ ids: [UUID], offset: Double = 0) async throws -> Int {
        try await server.count("""
            SELECT count(*) FROM events
            WHERE event_id = ANY(\(ids)) AND abs(extract(epoch FROM occurred_at - clock_timestamp()) - \(offset)) < 60
            """)
    }

    /// A server, and a client on `clock` whose drops the `DropLog` collects, for `body`.
    static func withClient(on clock: TestClock, _ body: (TestServer, EngageClient, DropLog) async throws -> Void) async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops, clock: clock)
        try await body(server, client, drops)
        await server.stop()
    }

    @Test func eventsOfAClockTwoAndAHalfHoursAheadAreStoredAtTheServersTime() async throws {
        // Right three hours ago: what the device recorded then, queued, keeps its time once the
        // clock is set ahead (the client moves it onto the clock it sends with, the server back).
        let clock = TestClock(Date().addingTimeInterval(-10_800))
        try await Self.withClient(on: clock) { server, client, drops in
            let before = try client.recordExpanded(notificationID: "n0", category: "new_photo")
            clock.advance(by: 10_800)
            clock.jump(by: 9_000)
            // So does an event the app gives the right time.
            let given = try client.recordDisplayed(notificationID: "n0", category: "new_photo", presentation: .plain,
                                                   attachmentKind: .none, occurredAt: Date())
            let ids = [
                try client.recordDelivered(notificationID: "n1", category: "new_photo", attachment: .none, outcome: .notRequested,
                                           processingMS: 12, timeWillExpire: false),
                try client.recordDisplayed(notificationID: "n1", category: "new_photo", presentation: .plain, attachmentKind: .none),
            ]
            let report = await client.flush(budget: .seconds(10))
            #expect(report == .init(ending: .drained, requests: 1, accepted: 4, duplicates: 0, dropped: 0))
            #expect(drops.all.isEmpty)
            #expect(try await Self.storedNearNow(server, ids + [given]) == 3)
            #expect(try await Self.storedNearNow(server, [before], offset: -10_800) == 1)
        }
    }

    /// Further ahead than a clock's error (a date set by hand): judged as sent, so rejected.
    @Test func aClockThirteenHoursAheadIsNotMoved() async throws {
        try await Self.withClient(on: TestClock(Date().addingTimeInterval(13 * 3_600))) { server, client, drops in
            // One event given the right time, one the clock's: only the second is refused.
            let right = try client.recordDisplayed(notificationID: "n1", category: "new_photo", presentation: .plain,
                                                   attachmentKind: .none, occurredAt: Date())
            let id = try client.recordExpanded(notificationID: "n1", category: "new_photo")
            let report = await client.flush(budget: .seconds(10))
            #expect(report == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 0, dropped: 1))
            #expect(try await Self.storedNearNow(server, [right]) == 1)
            #expect(try await stored(server, [id]) == 0)
            Self.expectRejectedAsAhead(drops, "is 12 hours in the future; the limit is 10 minutes")
        }
    }

    /// Recorded while the clock ran two hours ahead and sent after it was put right: the time
    /// since boot shows how far the clock was set back, so the events are sent at their real time
    /// instead of two hours in the future (refused, and lost): every kind the client times itself.
    @Test func anEventRecordedWhileTheClockRanAheadAndSentAfterItWasPutRightKeepsItsRealTime() async throws {
        let clock = TestClock(Date().addingTimeInterval(7_200))
        try await Self.withClient(on: clock) { server, client, drops in
            let shown = NotificationFacts(requestIdentifier: "apns-3", date: clock.now, category: "new_photo",
                                          payload: PushPayload(notificationID: "n3"), attachmentTypes: [])
            let ahead = [
                try client.recordExpanded(notificationID: "n1", category: "new_photo"),
                try client.recordSent(notificationID: "n2", category: "new_photo", media: []),
                try client.recordDelivered(notificationID: "n2", category: "new_photo", attachment: .none, outcome: .notRequested,
                                           processingMS: 12, timeWillExpire: false),
                try client.recordDisplayed(notificationID: "n2", category: "new_photo", presentation: .plain, attachmentKind: .none),
                try client.recordAction(notificationID: "n2", category: "new_photo", actionID: "like"),
                try client.recordDisplayedNow(shown),
            ]
            // Given by the app, the time is left as given: the server judges it (two hours ahead: refused).
            let given = try client.recordDisplayed(notificationID: "n1", category: "new_photo", presentation: .plain,
                                                   attachmentKind: .none, occurredAt: clock.now)
            clock.jump(by: -7_200)
            let report = await client.flush(budget: .seconds(10))
            #expect(report == .init(ending: .drained, requests: 1, accepted: 6, duplicates: 0, dropped: 1))
            #expect(try await Self.storedNearNow(server, ahead) == 6)
            #expect(try await stored(server, [given]) == 0)
            #expect(drops.all.map(\.eventIDs) == [[given.uuidString.lowercased()]])
        }
    }

    /// A notification that arrived while the clock ran two hours ahead, found by a sweep after
    /// the clock was put right: its date lies ahead of every clock, so its display is recorded at
    /// the sweep's time and stored, where it was refused as two hours in the future. So is the
    /// display an action implies for one no sweep found.
    @Test func aDisplayFoundByASweepAfterTheClockWasPutRightIsStored() async throws {
        let clock = TestClock(Date().addingTimeInterval(7_200))
        try await Self.withClient(on: clock) { server, client, drops in
            let swept = NotificationFacts(requestIdentifier: "apns-1", date: clock.now, category: "new_photo",
                                          payload: PushPayload(notificationID: "n1"), attachmentTypes: ["public.jpeg"])
            let answered = NotificationFacts(requestIdentifier: "apns-2", date: clock.now, category: "new_photo",
                                             payload: PushPayload(notificationID: "n2"), attachmentTypes: [])
            clock.jump(by: -7_200)
            #expect(client.recordDisplays(of: [swept]) == nil)
            let action = try client.recordAction(answered, actionID: "like")
            let report = await client.flush(budget: .seconds(10))
            #expect(report == .init(ending: .drained, requests: 1, accepted: 3, duplicates: 0, dropped: 0))
            #expect(drops.all.isEmpty, "\(drops.all)")
            let displays = ["n1", "n2"].map {
                EngageEvent.onceID(deviceID: "dev-test-1", notificationID: $0, type: "displayed")
            }
            #expect(try await Self.storedNearNow(server, displays + [action]) == 3)
        }
    }

    /// Recorded while the clock ran three hours behind, and sent when it ran two behind: filed at
    /// its real time, not hours early.
    @Test func anEventRecordedWhileTheClockRanBehindIsNotFiledEarly() async throws {
        let clock = TestClock(Date().addingTimeInterval(-10_800))
        try await Self.withClient(on: clock) { server, client, drops in
            let behind = try client.recordAction(notificationID: "n1", category: "new_photo", actionID: "like")
            let sent = try client.recordSent(notificationID: "n2", category: "new_photo", media: [])
            // Still behind as it sends: the server moves the events forward by the clock's error.
            clock.jump(by: 3_600)
            let report = await client.flush(budget: .seconds(10))
            #expect(report == .init(ending: .drained, requests: 1, accepted: 2, duplicates: 0, dropped: 0))
            #expect(try await Self.storedNearNow(server, [behind, sent]) == 2)
            #expect(drops.all.isEmpty)
        }
    }

    /// Across a reboot the time since boot says nothing: the event goes as recorded (here 2.5 hours
    /// ahead of the server's clock, refused as the server always judged it), and what the queue
    /// kept beside it never reaches the server.
    @Test func afterARebootAnEventGoesAsRecorded() async throws {
        let clock = TestClock(Date().addingTimeInterval(9_000))
        try await Self.withClient(on: clock) { server, client, drops in
            let id = try client.recordExpanded(notificationID: "n1", category: "new_photo")
            clock.reboot()
            clock.jump(by: -9_000)
            let after = try client.recordExpanded(notificationID: "n2", category: "new_photo")
            let report = await client.flush(budget: .seconds(10))
            #expect(report == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 0, dropped: 1))
            #expect(try await stored(server, [id]) == 0)
            #expect(try await Self.storedNearNow(server, [after]) == 1)
            Self.expectRejectedAsAhead(drops, "is 2 hours in the future; the limit is 10 minutes")
        }
    }

    /// The one drop is the server's rejection of `occurred_at`, in these words.
    static func expectRejectedAsAhead(_ drops: DropLog, _ words: String) {
        if case .rejected(field: "occurred_at", problem: let problem)? = drops.all.first?.reason {
            #expect(problem == words, "\(problem)")
        } else {
            Issue.record("expected the server's rejection of occurred_at, got \(drops.all)")
        }
        #expect(drops.all.count == 1)
    }
}
