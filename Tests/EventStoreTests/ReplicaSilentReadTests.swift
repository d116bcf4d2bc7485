@testable import EventStore
import Postgres
import Runtime
import Testing
import TestSupport

/// A replica that answers the reading of its lag, then no longer answers the read itself (its
/// host frozen in between: `body`'s own answer limit passes) is left for the primary, which
/// makes the read again, as when the reading finds it so; the read failed instead.
@Suite struct ReplicaSilentReadTests {
    @Test func aReadTheReplicaStopsAnsweringIsMadeAgainOnThePrimary() async throws {
        let database = try TestPostgres.freshDatabase()
        // Two pools on one server, which is no standby: its lag reads as none, so the replica is read.
        let primary = ConnectionPool(configuration: database, size: 1)
        let replica = ConnectionPool(configuration: database, size: 1)
        let registry = MetricsRegistry()
        let reads = ReadDatabase(primary: primary, replica: replica, logger: Logger(label: "test", sink: MemoryLogSink()),
                                 metrics: ReadReplicaMetrics(registry: registry))

        let read = try await reads.read { pool -> Int in
            if pool === replica { throw DatabaseDidNotAnswer(limit: .seconds(30)) }
            return try await pool.withConnection { try $0.query("SELECT 7")[0].decode(0, as: Int.self) }
        }

        #expect(read.value == 7)
        #expect(read.source == ReadSource(database: .primary, lag: .zero, fallback: .replicaUnreachable))
        await primary.close()
        await replica.close()
    }
}
