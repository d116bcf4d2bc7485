import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Testing
import TestSupport

@Suite("Faults: the projector process killed between two steps")
struct ProjectorCrashTests {
    static let batchSize = 40

    /// `engage project` projects part of the log and stops; more events arrive, some of them late
    /// events of notifications already projected; a projector process dies (exit as by SIGKILL)
    /// at `failpoint` inside its first batch; a new one, without failpoints, catches up. The read
    /// model then equals a rebuild by replay, row for row.
    @Test(.timeLimit(.minutes(2)), arguments: [
        "projector.after-read", "projector.after-fold", "projector.after-apply", "projector.before-commit", "projector.after-commit",
    ])
    func readModelEqualsARebuildAfterACrash(failpoint: String) async throws {
        let workspace = try FaultWorkspace("projector")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let store = EventStore(pool: pool)

        let early = FunnelEvents.notifications(60, label: "early")
        try await append(early, to: store)
        let first = try project(database, workspace: workspace, name: "project-first")
        try await waitUntilCaughtUp(pool, first)
        #expect(try await first.terminate() == 0)
        let projectedBefore = try await eventsProcessed(pool)
        #expect(projectedBefore == early.count)

        try await append(FunnelEvents.lateEngagement(of: early) + FunnelEvents.notifications(60, label: "later"), to: store)
        let crashing = try project(database, workspace: workspace, name: "project-crash", failpoints: "\(failpoint)=crash")
        #expect(try await crashing.exitStatus(within: .seconds(60)) == 137)
        // Only a batch that committed before the crash moved the checkpoint.
        let committed = failpoint == "projector.after-commit" ? Self.batchSize : 0
        #expect(try await eventsProcessed(pool) == projectedBefore + committed)

        let recovering = try project(database, workspace: workspace, name: "project-recover")
        try await waitUntilCaughtUp(pool, recovering)
        #expect(try await recovering.terminate() == 0)
        let recovered = try await ReadModelSnapshot.rows(pool)
        #expect(try await eventsProcessed(pool) == (try await count(pool, "SELECT count(*) FROM events")))

        #expect(try await EngagementRebuild(pool: pool).run() > 0)
        let rebuilt = try await ReadModelSnapshot.rows(pool)
        #expect(recovered.count == rebuilt.count)
        let onlyRecovered = Set(recovered).subtracting(rebuilt), onlyRebuilt = Set(rebuilt).subtracting(recovered)
        #expect(onlyRecovered.isEmpty, "only in the recovered model: \(onlyRecovered.sorted().prefix(3))")
        #expect(onlyRebuilt.isEmpty, "only in the rebuilt model: \(onlyRebuilt.sorted().prefix(3))")
        #expect(try await count(pool, "SELECT sum(notifications)::int8 FROM engagement_daily") == 120)
        await pool.close()
    }

    private func project(_ database: PostgresConfiguration, workspace: FaultWorkspace, name: String,
                         failpoints: String? = nil) throws -> EngageProcess {
        try EngageProcess(["project", "--batch", String(Self.batchSize)], database: database,
                          environment: failpoints.map { ["ENGAGE_FAILPOINTS": $0] } ?? [:], workspace: workspace, name: name)
    }

    /// Decodes the events as the API would and appends them in batches of 25.
    private func append(_ events: [WireEvent], to store: EventStore) async throws {
        for start in stride(from: 0, to: events.count, by: 25) {
            let chunk = Array(events[start..<min(start + 25, events.count)])
            let decoded = try decodeBatch(Array(chunk.body.utf8), format: .json, now: FunnelEvents.now)
            #expect(decoded.rejected.isEmpty, "\(decoded.rejected)")
            _ = try await store.append(decoded.events.map { AppendItem(appID: "app-1", event: $0) })
        }
    }

    private func waitUntilCaughtUp(_ pool: ConnectionPool, _ projector: EngageProcess) async throws {
        _ = try await projector.poll(timeout: .seconds(60), what: "the projector to catch up") {
            try await ReadModelSnapshot.isCaughtUp(pool) ? true : nil
        }
    }

    private func eventsProcessed(_ pool: ConnectionPool) async throws -> Int {
        try await count(pool, "SELECT events_processed FROM projection_checkpoints WHERE projection = 'engagement'")
    }

    private func count(_ pool: ConnectionPool, _ sql: SQL) async throws -> Int {
        try await pool.withConnection { try $0.query(sql)[0].decode(0, as: Int.self) }
    }
}
