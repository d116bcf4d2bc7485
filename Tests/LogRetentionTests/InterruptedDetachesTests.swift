@testable import LogRetention
import Postgres
import Runtime
import Testing
import TestSupport

@Suite("What an interrupted prune leaves")
struct InterruptedDetachesTests {
    /// A detached week is dropped whatever partition of the log it was: a week named after its
    /// Monday, or an hour migration 024 gave a partition of its own. An operator's table named
    /// otherwise is left alone.
    @Test func aDetachedPartitionOfAnyLogNameIsDropped() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        for name in ["events_2027_03_22", "events_2027_03_28_230000", "events_copy"] {
            try connection.execute(SQL(unsafeSQL: "CREATE TABLE \(name) (LIKE events INCLUDING DEFAULTS INCLUDING STORAGE)"))
        }
        let finished = try InterruptedDetaches.finish(beforeChange: {}, logger: Logger(label: "test", sink: MemoryLogSink()), on: connection)
        #expect(finished == 2)
        let left = try connection.query("""
            SELECT relname::text FROM pg_class WHERE relname IN ('events_2027_03_22', 'events_2027_03_28_230000', 'events_copy') ORDER BY 1
            """).rows.map { try $0.decode(0, as: String.self) }
        #expect(left == ["events_copy"])
    }
}
