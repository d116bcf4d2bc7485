import EventStore
import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// A run of partition maintenance that gets no answer within `answerLimit` once it has its
/// connection (here: its `CREATE TABLE ... PARTITION OF events` waits for a lock another session
/// holds) is interrupted and says so in one warning, worded as the projector's and the
/// scheduler's are; operators search the log for that line.
@Suite("Partition maintenance: a database that does not answer")
struct PartitionMaintenanceNoAnswerTests {
    @Test(.timeLimit(.minutes(1)))
    func aRunWithoutAnAnswerIsInterruptedAndLogged() async throws {
        // A partition to make, which needs the lock held below.
        let (database, pool) = try await PartitionMaintenanceFixtures.databaseWithAPartitionToMake(poolSize: 1)
        let holder = try Connection(configuration: database)
        defer { holder.close() }
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")

        let sink = MemoryLogSink()
        let maintenance = EventPartitionMaintenance(pool: pool, interval: .seconds(3600), answerLimit: .seconds(1),
                                                    logger: Logger(label: "test", sink: sink))
        let running = Task { try await maintenance.run() }
        defer { running.cancel() }
        try await pollUntil { sink.lines.contains { $0.contains("log.partitions-") } }
        let failed = sink.lines.filter { $0.contains("log.partitions-failed") }
        #expect(failed.count == 1 && failed[0].contains(#"error="the database did not answer within 1.0 seconds""#), "\(sink.lines)")
        #expect(!sink.lines.contains { $0.contains("log.partitions-created") })

        try holder.execute("ROLLBACK")
        running.cancel()
        _ = try? await running.value
        await pool.close()
    }
}
