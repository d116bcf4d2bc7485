import EventStore
import Foundation
import Postgres
@testable import Projections
import Runtime
import Testing
import TestSupport

/// A healthy database that is only busy: a command holds a lock on a read-model table longer
/// than the projector's `databaseAnswerLimit`. The projector's batch waits
/// for that lock, is interrupted, and starts again. Its interrupted statement must not stay behind
/// on the server, waiting for the same lock with its transaction open: one such backend a limit,
/// for as long as the lock is held, would end at `max_connections`.
@Suite("Engagement projector: waiting for a lock past its answer limit")
struct ProjectorLockWaitTests {
    @Test(.timeLimit(.minutes(2)))
    func anInterruptedBatchLeavesNoBackendWaitingForTheLock() async throws {
        let configuration = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: configuration, size: 4)
        let store = EventStore(pool: pool)
        let sink = MemoryLogSink()
        var settings = Projector.Configuration()
        settings.batchSize = 97
        settings.pollInterval = .milliseconds(100)
        settings.databaseAnswerLimit = .seconds(2)
        let projector = Projector(pool: pool, configuration: settings, logger: Logger(label: "test", sink: sink),
                                  metrics: ProjectorMetrics(registry: MetricsRegistry()))
        let running = Task { try await projector.run() }
        defer { running.cancel() }

        let first = ProjectionFixtures.events(notifications: 40, seed: 11)
        _ = try await store.append(first)
        try await pollUntil(every: .milliseconds(20)) { try await ReadModelSnapshot.isCaughtUp(pool) }

        // The command holds what `CREATE INDEX` holds on a read-model table while events arrive.
        // (Without a transaction id of its own, which would hold back what the projector reads.)
        let holder = try Connection(configuration: configuration)
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE engagement_daily IN SHARE MODE")
        let second = ProjectionFixtures.events(notifications: 40, seed: 12)
        _ = try await store.append(second)

        func interruptions() -> Int {
            sink.lines.filter { $0.contains("projector.error") && $0.contains("did not answer") }.count
        }
        let waiters = SQL("""
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> \(holder.backendPID)
            """)
        // After the second interruption, only the batch trying now should wait for the lock.
        var seen = (waiting: 0, interrupted: 0)
        try await pollUntil(every: .milliseconds(50)) {
            seen = (try await pool.withConnection { try $0.query(waiters)[0].decode(0, as: Int.self) }, interruptions())
            return (seen.interrupted >= 2 && seen.waiting <= 1) || seen.interrupted >= 6
        }
        #expect(seen.waiting <= 1, "\(seen.waiting) backends wait for a lock after \(seen.interrupted) interruptions")
        // Each interruption is one warning naming the limit, worded as every service's is.
        #expect(sink.lines.contains { $0.contains("projector.error") && $0.contains(#"error="the database did not answer within 2.0 seconds""#) },
                "\(sink.lines.filter { $0.contains("projector.error") })")

        try holder.execute("ROLLBACK")
        holder.close()
        try await pollUntil(every: .milliseconds(20)) { try await ReadModelSnapshot.isCaughtUp(pool) }
        let (processed, stored) = try await pool.withConnection { connection in
            (try connection.query("""
                SELECT events_processed FROM projection_checkpoints WHERE projection = \(EngagementStore.projectionName)
                """)[0].decode(0, as: Int.self),
             try connection.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self))
        }
        #expect(processed == stored, "the projector processed \(processed) events of the \(stored) stored")
        running.cancel()
        _ = try? await running.value
        await pool.close()
    }
}
