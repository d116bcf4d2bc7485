import Foundation
import Postgres
import Testing
import TestSupport

@Suite("Faults: a scheduler process killed mid-run")
struct SchedulerCrashTests {
    static let experiments = 8

    /// A scheduler process dies (exit as by SIGKILL) at `failpoint` while holding its first run,
    /// whose lease is short (3 s, the shortest allowed); two other scheduler processes share the
    /// remaining runs, and one of them retries the orphaned run once its lease expired. Every due
    /// run completes once.
    @Test(.timeLimit(.minutes(2)), arguments: ["scheduler.after-claim", "scheduler.after-analysis", "scheduler.before-finish"])
    func everyDueRunCompletesExactlyOnce(failpoint: String) async throws {
        let workspace = try FaultWorkspace("scheduler")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        try await ScheduledRuns.startExperiments(Self.experiments, pool: pool)

        let crashing = try EngageProcess(["scheduler", "--poll", "1", "--lease", "3"], database: database,
                                         environment: ["ENGAGE_FAILPOINTS": "\(failpoint)=crash"], workspace: workspace, name: "scheduler-crash")
        #expect(try await crashing.exitStatus(within: .seconds(60)) == 137)
        let orphaned = try await pool.withConnection { connection in
            try connection.query("SELECT id FROM experiment_runs WHERE status = 'running'").rows.map { try $0.decode(0, as: Int.self) }
        }
        #expect(orphaned.count == 1)
        #expect(ScheduledRuns.completedRunIDs(crashing.log).isEmpty)

        let survivors = try ["scheduler-a", "scheduler-b"].map { name in
            try EngageProcess(["scheduler", "--poll", "1", "--lease", "60"], database: database, workspace: workspace, name: name)
        }
        try await ScheduledRuns.waitUntilAllDone(pool, experiments: Self.experiments)
        for scheduler in survivors { #expect(try await scheduler.terminate() == 0) }
        try await ScheduledRuns.expectEachCompletedOnce(pool, experiments: Self.experiments, schedulers: survivors)
        // The orphaned run was claimed twice (the dead scheduler's attempt and the retry), every other once.
        let attempts = try await pool.withConnection { connection in
            try connection.query("SELECT id, attempts FROM experiment_runs").rows.map { (try $0.decode(0, as: Int.self), try $0.decode(1, as: Int.self)) }
        }
        for (id, count) in attempts { #expect(count == (orphaned.contains(id) ? 2 : 1), "run \(id)") }
        await pool.close()
    }
}
