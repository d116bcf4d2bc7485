import Foundation
import Testing
import TestSupport
@testable import EngageClient

/// An event the server's PostgreSQL refuses for its values (validation let it through; here a
/// test-only trigger on the server's database refuses its category, `RefusingConstraint`) is
/// dropped alone, as rejected; it does not hold back the device's queue. One a constraint of the
/// database refuses (the schema's doing, for its operators to mend) is kept with its request.
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
            reason: .rejected(field: nil, problem: "not-storable: PostgreSQL refused this event (SQLSTATE 22003); "
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

    /// A CHECK constraint refuses the event (class 23): the server fails its request whole with
    /// a 500, and the client keeps every event of it for a later flush, dropping none.
    @Test func aRequestAConstraintRefusesIsKeptWhole() async throws {
        let server = try TestServer()
        try RefusingConstraint.addCheck(to: server.database)
        let container = Container()
        defer { container.remove() }
        let drops = DropLog()
        // A first backoff longer than the flush's budget: one request, then the flush ends backing
        // off, however long the request takes on a busy machine (with the default half second, the
        // flush retried until a backoff outran the budget, and a slow request could outrun it first).
        let client = try makeClient(container, port: server.port, key: try await server.key(), drops: drops) {
            $0.batchSize = 3
            $0.retry = RetryPolicy(initialDelay: .seconds(120))
        }
        var ids: [UUID] = []
        for index in 0..<3 {
            ids.append(try client.recordSent(notificationID: "n-\(index)", category: index == 1 ? RefusingConstraint.category : "new_photo",
                                             media: []))
        }
        let report = await client.flush(budget: .seconds(10))
        guard case .backingOff = report.ending else {
            Issue.record("the flush ended \(report.ending), not backing off")
            return
        }
        #expect(report.requests == 1 && report.accepted == 0 && report.dropped == 0)
        #expect(drops.all.isEmpty)
        #expect(client.dropCounts == DropCounts())
        #expect(client.pending.events == 3)
        #expect(try await stored(server, ids) == 0)
        await server.stop()
    }
}
