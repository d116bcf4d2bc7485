import Foundation
import Testing
import TestSupport
@testable import EngageClient

/// An event the server's PostgreSQL refuses (validation let it through; here a test-only CHECK
/// constraint on the server's database refuses its category, `RefusingConstraint`) is dropped
/// alone, as rejected; it does not hold back the device's queue.
@Suite("EngageClient and an event PostgreSQL refuses", .serialized)
struct RefusedEventTests {
    @Test func theRefusedEventIsDroppedAndCountedAndTheRestDelivered() async throws {
        let server = try TestServer()
        try RefusingConstraint.add(to: server.database)
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops) { $0.batchSize = 3 }
        var ids: [UUID] = []
        for index in 0..<6 {
            ids.append(try client.recordSent(notificationID: "n-\(index)", category: index == 1 ? RefusingConstraint.category : "new_photo",
                                             media: []))
        }
        // The oldest segment holds the refused event: the rest of it, and the segment after it, go.
        let report = await client.flush(budget: .seconds(10))
        #expect(report == .init(ending: .drained, requests: 2, accepted: 5, duplicates: 0, dropped: 1))
        let refusedID = ids[1].uuidString.lowercased()
        #expect(drops.all == [EngageClient.DroppedEvents(
            reason: .rejected(field: nil, problem: "not-storable: PostgreSQL refused this event (SQLSTATE 23514); "
                + "sent again it fails the same way: report it to the server's operators"),
            eventIDs: [refusedID])])
        var expected = DropCounts()
        expected.rejected = 1
        #expect(client.dropCounts == expected)
        #expect(try await stored(server, ids) == 5)
        #expect(try await stored(server, [ids[1]]) == 0)
        #expect(client.pending == (0, 0, 0))
        await server.stop()
    }
}
