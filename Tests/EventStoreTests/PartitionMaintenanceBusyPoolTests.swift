import EventStore
import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// Partition maintenance shares `engage serve`'s pool with the read routes: waiting for a
/// connection while a long read holds them all is a busy pool, not a database that does not
/// answer; the run waits and makes its partitions instead of giving up until the next hour.
@Suite("Partition maintenance: waiting for a busy pool")
struct PartitionMaintenanceBusyPoolTests {
    @Test(.timeLimit(.minutes(1)))
    func aWaitForABusyPoolIsNotADatabaseThatDoesNotAnswer() async throws {
        let (_, pool) = try await PartitionMaintenanceFixtures.databaseWithAPartitionToMake(poolSize: 1)
        let longRead = Task { try await pool.withConnection { _ = try $0.query("SELECT pg_sleep(3)") } }
        try await pollUntil { pool.statistics.inUse == 1 }
        let sink = MemoryLogSink()
        let maintenance = EventPartitionMaintenance(pool: pool, interval: .seconds(3600), answerLimit: .seconds(1),
                                                    logger: Logger(label: "test", sink: sink))
        let running = Task { try await maintenance.run() }
        defer { running.cancel() }
        try await longRead.value
        try await pollUntil { sink.lines.contains { $0.contains("log.partitions-") } }
        #expect(sink.lines.filter { $0.contains("log.partitions-failed") }.isEmpty, "\(sink.lines)")
        #expect(sink.lines.contains { $0.contains("log.partitions-created") })
        running.cancel()
        _ = try? await running.value
        await pool.close()
    }
}
