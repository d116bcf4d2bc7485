import EngageAPI
import Foundation
import Postgres
import Projections
import Testing
import TestSupport

@Suite("More than one process against one database")
struct MultiProcessTests {
    static let experiments = 6

    /// Two `engage serve` processes (each with a projector) on two ports and two `engage
    /// scheduler` processes share one database. Clients alternate between the servers, and some
    /// batches go to both at once. One projector is active, the other stands by and takes over
    /// when the active one is killed. Every event is stored once, every due run completes once,
    /// and the read model equals a rebuild.
    @Test(.timeLimit(.minutes(3)))
    func twoServersAndTwoSchedulersShareOneDatabase() async throws {
        let workspace = try FaultWorkspace("multi")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let keys = KeyStore(pool: pool)
        let key = try await keys.create(app: "app-1", role: .ingest).secret
        let sharedKey = try await keys.create(app: "both", role: .ingest).secret
        try await ScheduledRuns.startExperiments(Self.experiments, pool: pool)

        // The first server's projector takes the lock before the second starts.
        let (first, firstPort) = try await EngageProcess.readyServer(database: database, projector: true, workspace: workspace, name: "serve-a")
        try await waitForActiveProjector(first, port: firstPort)
        let (second, secondPort) = try await EngageProcess.readyServer(database: database, projector: true, workspace: workspace, name: "serve-b")
        let schedulers = try ["scheduler-a", "scheduler-b"].map { name in
            try EngageProcess(["scheduler", "--poll", "1"], database: database, workspace: workspace, name: name)
        }

        let load = IngestLoad(key: key, ports: [firstPort, secondPort])
        async let clients: Void = load.run(clients: 4)
        // The same batch sent to both servers at once is stored once.
        var sharedIDs: [String] = []
        for round in 0..<10 {
            let batch = FunnelEvents.notifications(5, label: "both-\(round)")
            sharedIDs += batch.ids
            async let viaFirst = post(batch, key: sharedKey, port: firstPort)
            async let viaSecond = post(batch, key: sharedKey, port: secondPort)
            let answers = try await [viaFirst, viaSecond]
            #expect(answers.map(\.accepted).reduce(0, +) == batch.count, "\(answers)")
            #expect(answers.map(\.duplicates).reduce(0, +) == batch.count, "\(answers)")
        }
        try await load.waitForAcknowledgements(500)
        #expect(try await EngageProcess.metric("engage_projector_active", port: secondPort) == 0)

        // The active projector dies with its server; the standby takes over.
        try await first.kill()
        load.send(to: [secondPort])
        try await waitForActiveProjector(second, port: secondPort)
        try await load.waitForAcknowledgements(500)
        load.stop()
        await clients

        try await load.expectLogMatches(pool, app: "app-1")
        let shared = try await pool.withConnection { connection in
            try connection.query("SELECT event_id::text FROM events WHERE app_id = 'both'").rows.map { try $0.decode(0, as: String.self) }
        }
        #expect(shared.sorted() == sharedIDs.sorted())

        try await ScheduledRuns.waitUntilAllDone(pool, experiments: Self.experiments)
        for scheduler in schedulers { #expect(try await scheduler.terminate() == 0) }
        try await ScheduledRuns.expectEachCompletedOnce(pool, experiments: Self.experiments, schedulers: schedulers)

        _ = try await second.poll(timeout: .seconds(60), what: "the projector to catch up") {
            try await ReadModelSnapshot.isCaughtUp(pool) ? true : nil
        }
        #expect(try await second.terminate() == 0)
        let projected = try await ReadModelSnapshot.rows(pool)
        #expect(try await EngagementRebuild(pool: pool).run() > 0)
        let rebuilt = try await ReadModelSnapshot.rows(pool)
        #expect(projected.count == rebuilt.count)
        #expect(Set(projected).symmetricDifference(rebuilt).isEmpty)
        let notifications = try await pool.withConnection { connection in
            try connection.query("SELECT count(DISTINCT (app_id, notification_id)) FROM events WHERE app_id IN ('app-1', 'both')")[0]
                .decode(0, as: Int.self)
        }
        #expect(try await pool.withConnection { try $0.query("SELECT sum(notifications)::int8 FROM engagement_daily")[0].decode(0, as: Int.self) }
                == notifications)
        await pool.close()
    }

    private func waitForActiveProjector(_ server: EngageProcess, port: Int) async throws {
        _ = try await server.poll(timeout: .seconds(30), what: "its projector to become active") {
            try await EngageProcess.metric("engage_projector_active", port: port) == 1 ? true : nil
        }
    }

    private struct Answer: Sendable, CustomStringConvertible {
        var accepted: Int
        var duplicates: Int
        var description: String { "accepted \(accepted), duplicates \(duplicates)" }
    }

    private func post(_ batch: [WireEvent], key: String, port: Int) async throws -> Answer {
        let response = try await offPool {
            try RawHTTPClient(port: port).request("POST", "/v1/events", headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")],
                                                  body: Array(batch.body.utf8))
        }
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        guard response.status == 200, let accepted = (object?["accepted"] as? NSNumber)?.intValue,
              let duplicates = (object?["duplicates"] as? NSNumber)?.intValue else {
            throw FaultTestError("POST to \(port) answered \(response.status): \(response.text)")
        }
        return Answer(accepted: accepted, duplicates: duplicates)
    }
}
