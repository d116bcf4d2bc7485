import EngageCore
@testable import EventStore
import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// A read replica that answers but whose pool is busy (a scheduler's analysis or a long
/// `/v1/simulate` holding its connections) is not a replica that went away: the lag reading's
/// bound (`answerLimit`, meant for a replica that answers nothing) must not count the wait for a
/// connection, or every read during a long replay goes to the primary, logged and counted as
/// `replica_unreachable`, and the replica is skipped for `retryUnreachableAfter`.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct BusyReplicaReadTests {
    @Test func aReplicaWhosePoolIsBusyIsNotCountedUnreachable() async throws {
        let replication = try await offPool { try StreamingReplication(label: "es-busy") }
        let (primary, replica) = try await offPool { try replication.freshDatabase() }
        let primaryPool = ConnectionPool(configuration: primary, size: 2)
        let replicaPool = ConnectionPool(configuration: replica, size: 1)
        let reads = ReadDatabase(primary: primaryPool, replica: replicaPool, configuration: .init(answerLimit: .milliseconds(500)),
                                 logger: Logger(label: "test", level: .info, sink: MemoryLogSink()),
                                 metrics: ReadReplicaMetrics(registry: MetricsRegistry()))
        let inRecovery: @Sendable (ConnectionPool) async throws -> Bool = { pool in
            try await pool.withConnection { try $0.query("SELECT pg_is_in_recovery()")[0].decode(0) }
        }
        #expect(try await reads.read(inRecovery).source == ReadSource(database: .replica, lag: .zero))

        // A long read holds the replica's only connection for four times the limit.
        let long = Task { try await replicaPool.withConnection { try $0.query("SELECT pg_sleep(2)") } }
        try await pollUntil { replicaPool.statistics.inUse == 1 }
        let read = try await reads.read(inRecovery)
        #expect(read.source.fallback != .replicaUnreachable, "\(read.source) while the replica answered a long read")
        _ = try await long.value

        await primaryPool.close()
        await replicaPool.close()
        try? await offPool { try replication.stopReplica() }
    }
}
