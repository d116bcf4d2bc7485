import EngageCore
@testable import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

/// `EventStore.appendIsolatingRefusedRows` against a real PostgreSQL whose `events` refuses one
/// category (`RefusingConstraint`): exactly the refused rows come back refused, everything else
/// is stored once.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct RefusedRowIsolationTests {
    @Test func findsEveryRefusedRowAndStoresTheRest() throws {
        let database = try TestPostgres.freshDatabase()
        try RefusingConstraint.add(to: database)
        var items = (0..<9).map { AppendItem(appID: "app-1", event: EventFactory.event(notification: "n-\($0)")) }
        for refused in [1, 6] { items[refused].event.category = RefusingConstraint.category }
        // An item repeating a refused event's id is refused with it; one repeating a stored
        // event's id is its duplicate.
        items.append(items[6])
        items.append(items[0])
        let connection = ReusableConnection(configuration: database)
        defer { connection.close() }
        let refused = AppendResult.Outcome.refused(sqlState: RefusingConstraint.sqlState)
        let result = try EventStore.appendIsolatingRefusedRows(PreparedBatch(items), using: connection)
        #expect(result.outcomes == [.stored, refused, .stored, .stored, .stored, .stored, refused, .stored, .stored, refused, .duplicate])
        #expect(try CommitterTests.storedEvents(database) == 7)

        // Again: the stored ones are duplicates, the refused ones refused again.
        let again = try EventStore.appendIsolatingRefusedRows(PreparedBatch(items), using: connection)
        #expect(again.outcomes == result.outcomes.map { $0 == .stored ? .duplicate : $0 })
        #expect(try CommitterTests.storedEvents(database) == 7)
    }
}
