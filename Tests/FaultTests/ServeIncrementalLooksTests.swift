import EngageCore
import EventStore
import Experiments
import Foundation
import Postgres
import Testing
import TestSupport

/// `engage serve --incremental-looks` as an operator runs it: its scheduler analyses a due
/// experiment by an incremental look, and counts the events the look folded on `/metrics`.
@Suite("engage serve --incremental-looks")
struct ServeIncrementalLooksTests {
    @Test(.timeLimit(.minutes(3)))
    func theServersSchedulerLooksIncrementallyAndCountsTheEventsItFolded() async throws {
        let workspace = try FaultWorkspace("serve-incremental")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let experiment = ExperimentTag(id: "looked-0", arm: "control")
        _ = try await EventStore(pool: pool).append(LogCommandTests.events(20, tag: "looked", experiment: experiment))
        let store = ExperimentStore(pool: pool)
        // Started two years ago, analysed every 1 January: one run due.
        _ = try await store.create(ExperimentDefinition(
            id: experiment.id, appID: "app-1",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)],
            primaryMetric: .open, guardrails: [], schedule: try CronSchedule("0 0 1 1 *")))
        _ = try await store.start(experiment.id, now: FunnelEvents.now.adding(microseconds: -2 * 366 * 86_400 * Timestamp.microsecondsPerSecond))

        let (server, port) = try await EngageProcess.readyServer(database: database, scheduler: true, options: ["--incremental-looks"],
                                                                 workspace: workspace, name: "serve")
        try await ScheduledRuns.waitUntilAllDone(pool, experiments: 1, prefix: "looked")
        // Only an incremental look leaves a checkpoint of the tallies it folded.
        let folded = try await pool.withConnection { connection in
            try connection.query("SELECT events FROM experiment_tally_checkpoints WHERE experiment_id = \(experiment.id)").rows
                .map { try $0.decode(0, as: Int.self) }
        }
        #expect(folded == [20], "\(server.log.suffix(2000))")
        // The counter moves after the run is stored: wait for it to be set at all.
        var replayed: Double?
        for _ in 0..<600 where replayed ?? 0 == 0 {
            replayed = try await EngageProcess.metric("engage_scheduler_events_replayed_total", port: port)
            if replayed ?? 0 == 0 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(replayed == 20)
        #expect(try await server.terminate() == 0)
        await pool.close()
    }
}
