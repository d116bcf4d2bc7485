import EngageCore
import EventStore
import Postgres
@testable import Projections
import Testing
import TestSupport

/// engage's SQL writes backslashes in ordinary string literals (the log's partition bounds are
/// read with regular expressions, so is the shape of an index a rebuild names back). A database
/// or role set to `standard_conforming_strings = off`, which PostgreSQL still allows, reads `\(`
/// as `(`: every engage session sets it on, whatever the server's default.
@Suite("standard_conforming_strings off on the server")
struct StandardConformingStringsTests {
    @Test func migrationsPartitionBoundsAndARebuildReadBackslashesAsWritten() async throws {
        let configuration = try TestPostgres.freshDatabase(migrated: false)
        let setup = try Connection(configuration: configuration)
        try setup.execute("""
            DO $$ BEGIN
                EXECUTE format('ALTER DATABASE %I SET standard_conforming_strings = off', current_database());
            END $$
            """)
        setup.close()

        for run in 1...2 {
            // A new session each time: it is the database's setting a session starts with.
            let connection = try Connection(configuration: configuration)
            #expect(try connection.query("SHOW standard_conforming_strings")[0].decode(0, as: String.self) == "on", "run \(run)")
            try Migrator.fromSQLDirectory().migrate(connection)
            let unbounded = try connection.query("SELECT count(*) FROM event_partitions WHERE upper IS NULL")[0].decode(0, as: Int.self)
            #expect(unbounded == 0, "run \(run): every partition's bounds read")
            connection.close()
        }

        let pool = ConnectionPool(configuration: configuration, size: 2)
        _ = try await EventStore(pool: pool).append(ProjectionFixtures.events(notifications: 30, seed: 84))
        try await HistogramTrimTests.catchUp(pool)
        func indexNames() async throws -> [String] {
            try await pool.withConnection { connection in
                try connection.query("""
                    SELECT indexname FROM pg_indexes
                    WHERE schemaname = current_schema() AND tablename = ANY(\(ReadModelTables.live.all))
                    ORDER BY 1
                    """).rows.map { try $0.decode(0, as: String.self) }
            }
        }
        let before = try await indexNames()
        #expect(try await EngagementRebuild(pool: pool).run() > 0)
        #expect(try await indexNames() == before, "the rebuild names every copied index back")
        await pool.close()
    }
}
