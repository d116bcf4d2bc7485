import EngageCore
@testable import Experiments
import Postgres
import Runtime
import Testing
import TestSupport

/// A scheduler stopped (SIGTERM) during an analysis gives its run back at once, the attempt
/// uncounted. It left the run claimed until its lease ran out (up to `--lease`), and a rolling
/// restart during long analyses spent the three attempts and failed the run for good.
@Suite("Scheduler: stopped during an analysis")
struct SchedulerShutdownTests {
    @Test(.timeLimit(.minutes(1)), arguments: ["scheduler.after-claim", "scheduler.after-analysis"])
    func aStoppedSchedulerGivesItsRunBack(stoppedAt failpoint: String) async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await SchedulerTests.runningExperiment(start: start)
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        var stoppedThrice = 0
        for round in 1...3 {
            // Each scheduler of a rolling restart waits in its run until it is stopped.
            let a = Fixtures.scheduler(database, clock: clock, owner: "scheduler-\(round)") { configuration in
                configuration.failpoint = { name in
                    if name == failpoint { try await Task.sleep(for: .seconds(3_600)) }
                }
            }
            let running = Task { try await a.tick() }
            try await pollUntil(every: .milliseconds(10)) {
                try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs WHERE status = 'running'") == 1
            }
            running.cancel()
            _ = await running.result
            #expect(try await Fixtures.count(pool, """
                SELECT count(*) FROM experiment_runs
                WHERE status = 'pending' AND attempts = 0 AND lease_until IS NULL AND error LIKE 'given back:%'
                """) == 1)
            stoppedThrice += 1
            await a.pool.close()
        }
        #expect(stoppedThrice == 3)
        // The next scheduler analyses it at once, as its first attempt.
        let b = Fixtures.scheduler(database, clock: clock, owner: "scheduler-b")
        #expect(try await b.tick() == 1)
        #expect(try await Fixtures.count(pool, """
            SELECT count(*) FROM experiment_runs WHERE status = 'done' AND attempts = 1 AND error IS NULL
            """) == 1)
        await b.pool.close()
        await pool.close()
    }
}
