import Foundation
import Testing
import TestSupport
@testable import EngageClient

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

    @Test func eventsOfAClockTwoAndAHalfHoursAheadAreStoredAtTheServersTime() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        // Right three hours ago: what the device recorded then, queued, keeps its time.
        let clock = TestClock(Date().addingTimeInterval(-10_800))
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops, clock: clock)
        let before = try client.recordExpanded(notificationID: "n0", category: "new_photo")
        clock.advance(by: 10_800 + 9_000)
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
        await server.stop()
    }

    /// Further ahead than a clock's error (a date set by hand): judged as sent, so rejected.
    @Test func aClockThirteenHoursAheadIsNotMoved() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let clock = TestClock(Date().addingTimeInterval(13 * 3_600))
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops, clock: clock)
        // One event given the right time, one the clock's: only the second is refused.
        let right = try client.recordDisplayed(notificationID: "n1", category: "new_photo", presentation: .plain,
                                               attachmentKind: .none, occurredAt: Date())
        let id = try client.recordExpanded(notificationID: "n1", category: "new_photo")
        let report = await client.flush(budget: .seconds(10))
        #expect(report == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 0, dropped: 1))
        #expect(try await Self.storedNearNow(server, [right]) == 1)
        #expect(try await stored(server, [id]) == 0)
        if case .rejected(field: "occurred_at", problem: let problem)? = drops.all.first?.reason {
            #expect(problem == "is 12 hours in the future; the limit is 10 minutes", "not moved: \(problem)")
        } else {
            Issue.record("expected the server's rejection of occurred_at, got \(drops.all)")
        }
        await server.stop()
    }
}
