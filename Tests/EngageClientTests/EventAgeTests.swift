import Foundation
import Testing
import TestSupport
@testable import EngageClient

/// The server judges an event's age by its own clock; the device's clock, which the user may set
/// a month ahead, drops nothing.
@Suite("EngageClient: the server judges age", .serialized)
struct EventAgeTests {
    /// One event is 31 days old by the server's clock (the server refuses it, and only then is
    /// it dropped, as rejected); the other was recorded just now, and the device's clock then
    /// jumps a month ahead: by that clock both look older than 30 days, yet the server takes the
    /// second one.
    @Test func aClockSetAMonthAheadDropsNothingTheServerAccepts() async throws {
        let server = try TestServer()
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let clock = TestClock(Date().addingTimeInterval(-31 * 86_400))
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops, clock: clock)
        let tooOld = try client.recordDisplayed(notificationID: "n1", category: "new_photo", presentation: .rich,
                                                attachmentKind: .image)
        clock.advance(by: 31 * 86_400)
        let recent = try client.recordDisplayed(notificationID: "n2", category: "new_photo", presentation: .rich,
                                                attachmentKind: .image)
        clock.jump(by: 31 * 86_400)

        let report = await client.flush(budget: .seconds(10))
        #expect(report == .init(ending: .drained, requests: 1, accepted: 1, duplicates: 0, dropped: 1))
        #expect(try await stored(server, [recent]) == 1)
        #expect(try await stored(server, [tooOld]) == 0)
        #expect(drops.all.count == 1)
        if case .rejected(field: "occurred_at", problem: _)? = drops.all.first?.reason {} else {
            Issue.record("expected the server's rejection of occurred_at, got \(drops.all)")
        }
        #expect(drops.all.first?.eventIDs == [tooOld.uuidString.lowercased()])
        #expect(client.dropCounts.rejected == 1 && client.dropCounts.expired == 0)
        #expect(client.pending == (0, 0, 0))
        await server.stop()
    }
}
