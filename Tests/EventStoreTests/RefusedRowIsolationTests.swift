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

    /// An item repeating another item's id in the batch, of another app, is answered as
    /// `append` answers it (a duplicate when the id's holder is its own app, else
    /// `idOfAnotherApp`), also when the batch is isolated around a refused row: its fate
    /// depends on which app holds the id, not on its first item's outcome.
    @Test func aRepeatOfAnotherAppIsAnsweredAsAppendAnswersIt() throws {
        let database = try TestPostgres.freshDatabase()
        try RefusingConstraint.add(to: database)
        let heldByOne = EventFactory.event(notification: "held-1"), heldByThree = EventFactory.event(notification: "held-3")
        let connection = ReusableConnection(configuration: database)
        defer { connection.close() }
        _ = try EventStore.append([PreparedBatch([AppendItem(appID: "app-1", event: heldByOne),
                                                  AppendItem(appID: "app-3", event: heldByThree)])], using: connection)
        var refused = EventFactory.event(notification: "refused")
        refused.category = RefusingConstraint.category
        let items = [AppendItem(appID: "app-1", event: heldByOne), AppendItem(appID: "app-2", event: heldByOne),
                     AppendItem(appID: "app-1", event: heldByThree), AppendItem(appID: "app-3", event: heldByThree),
                     AppendItem(appID: "app-1", event: refused)]
        let result = try EventStore.appendIsolatingRefusedRows(PreparedBatch(items), using: connection)
        #expect(result.outcomes == [.duplicate, .idOfAnotherApp, .idOfAnotherApp, .duplicate, .refused(sqlState: RefusingConstraint.sqlState)])
        // What append answers for the same items without the refused one.
        let plain = try EventStore.append([PreparedBatch(Array(items.prefix(4)))], using: connection)[0]
        #expect(plain.outcomes == Array(result.outcomes.prefix(4)))
    }
}
