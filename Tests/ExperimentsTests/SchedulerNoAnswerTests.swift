@testable import Experiments
import Postgres
import Runtime
import Testing
import TestSupport

/// A database call of the scheduler that gets no answer within `databaseAnswerLimit` once it has
/// its connection (here: the enqueue waits for a lock another session holds on the runs) is
/// interrupted; the poll fails with one warning naming the limit, and the next poll tries again.
@Suite(.serialized)
struct SchedulerNoAnswerTests {
    @Test(.timeLimit(.minutes(1)))
    func aCallWithoutAnAnswerFailsThePollWithTheLimitNamed() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await SchedulerTests.runningExperiment(start: start)
        let holder = try Connection(configuration: database)
        defer { holder.close() }
        try holder.execute("BEGIN")
        try holder.execute("LOCK TABLE experiment_runs IN ACCESS EXCLUSIVE MODE")

        var configuration = Scheduler.Configuration()
        configuration.ownerID = "scheduler-a"
        configuration.databaseAnswerLimit = .seconds(1)
        configuration.pollInterval = .seconds(600)
        let sink = MemoryLogSink()
        let schedulerPool = ConnectionPool(configuration: database, size: 1)
        let scheduler = Scheduler(pool: schedulerPool, configuration: configuration, logger: Logger(label: "test", sink: sink))
        let running = Task { try await scheduler.run() }
        defer { running.cancel() }
        try await pollUntil { sink.lines.contains { $0.contains("scheduler.error") } }
        let errors = sink.lines.filter { $0.contains("scheduler.error") }
        #expect(errors.count == 1 && errors[0].contains(#"error="the database did not answer within 1.0 seconds""#), "\(sink.lines)")

        try holder.execute("ROLLBACK")
        running.cancel()
        _ = try? await running.value
        await schedulerPool.close()
        await pool.close()
    }
}
