import Postgres
@testable import Projections
import Testing
import TestSupport

/// A projector batch runs without JIT compilation, and only the batch: the connection returns to
/// the pool with the session's own setting, for the analyses that want JIT.
@Suite("Batch transaction settings")
struct BatchTransactionSettingsTests {
    @Test func aBatchTurnsJITOffForItsTransactionOnly() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        try connection.execute("SET jit = on")
        let inside: String = try connection.transaction { connection in
            _ = try EngagementStore.beginBatch(EngagementStore.projectionName, on: connection)
            return try connection.query("SELECT current_setting('jit')")[0].decode(0)
        }
        #expect(inside == "off")
        let after: String = try connection.query("SELECT current_setting('jit')")[0].decode(0)
        #expect(after == "on")
    }
}
