@testable import Experiments
import Postgres
import Runtime
import Testing
import TestSupport

/// The scheduler shares `engage serve`'s pool with the read routes: a report or a simulation
/// may hold every connection for longer than `databaseAnswerLimit`. That wait is a busy pool,
/// not a database that does not answer: it must not fail the scheduler's calls (a failed claim
/// or read counts an attempt; three of them fail the run, and at `stop_at` stop the experiment).
@Suite(.serialized)
struct BusyPoolSchedulerTests {
    @Test func aWaitForABusyPoolIsNotADatabaseThatDoesNotAnswer() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await SchedulerTests.runningExperiment(start: start)
        var configuration = Scheduler.Configuration()
        configuration.ownerID = "scheduler-a"
        configuration.databaseAnswerLimit = .seconds(1)
        let busy = ConnectionPool(configuration: database, size: 1)
        let scheduler = Scheduler(pool: busy, configuration: configuration,
                                  time: ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z")), logger: Fixtures.logger)
        // A long read holds the pool's only connection for three times the limit; the database answers all along.
        let longRead = Task { try await busy.withConnection { _ = try $0.query("SELECT pg_sleep(3)") } }
        try await pollUntil { busy.statistics.inUse == 1 }
        let completed = try await scheduler.tick()
        #expect(completed == 1)
        try await longRead.value
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.attempts) == [1])
        await busy.close()
        await pool.close()
    }
}
