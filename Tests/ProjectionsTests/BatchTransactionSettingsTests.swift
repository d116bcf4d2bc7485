import Postgres
@testable import Projections
import Testing
import TestSupport

/// A projector batch runs without JIT compilation and, unless it must wait for the flush (a
/// rebuild's swap), with `synchronous_commit` off; only the batch: the connection returns to the
/// pool with the session's own settings, for the analyses that want JIT.
@Suite("Batch transaction settings")
struct BatchTransactionSettingsTests {
    @Test(arguments: [false, true])
    func aBatchChangesItsTransactionsSettingsOnly(waitsForFlush: Bool) throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        // A session asking for more than a local flush: a batch that waits must keep it.
        try connection.execute("SET jit = on")
        try connection.execute("SET synchronous_commit = remote_apply")
        let inside: [String] = try connection.transaction { connection in
            _ = try EngagementStore.beginBatch(EngagementStore.projectionName, waitsForFlush: waitsForFlush, on: connection)
            return try Self.settings(on: connection)
        }
        #expect(inside == ["off", waitsForFlush ? "remote_apply" : "off"])
        #expect(try Self.settings(on: connection) == ["on", "remote_apply"])
    }

    static func settings(on connection: Connection) throws -> [String] {
        let row = try connection.query("SELECT current_setting('jit'), current_setting('synchronous_commit')")[0]
        return [try row.decode(0), try row.decode(1)]
    }
}
