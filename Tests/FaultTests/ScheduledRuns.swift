import EngageCore
import Experiments
import Foundation
import Postgres
import Testing

/// Running experiments whose analyses are due, and checks that every due run was completed by
/// exactly one scheduler process.
enum ScheduledRuns {
    /// The app of the experiments; their lifecycle and decisions are appended to its log.
    static let app = "experiments"

    /// `count` running experiments analysed every 1 January, started two years ago: each has
    /// exactly one run due (last 1 January), and no other falls due while a test runs. Their ids
    /// are `prefix-0`, `prefix-1`...
    static func startExperiments(_ count: Int, pool: ConnectionPool, prefix: String = "faults") async throws {
        let store = ExperimentStore(pool: pool)
        let start = FunnelEvents.now.adding(microseconds: -2 * 366 * 86_400 * Timestamp.microsecondsPerSecond)
        for number in 0..<count {
            let id = "\(prefix)-\(number)"
            _ = try await store.create(ExperimentDefinition(
                id: id, appID: app,
                arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                       ExperimentArmDefinition(name: "treatment", strategy: .thumbnail, weight: 0.5)],
                primaryMetric: .open, schedule: try CronSchedule("0 0 1 1 *")))
            _ = try await store.start(id, now: start)
        }
    }

    /// Waits until each of `experiments` (ids starting with `prefix-`) has its run and none of
    /// theirs is left pending or running.
    static func waitUntilAllDone(_ pool: ConnectionPool, experiments: Int, prefix: String = "faults",
                                 timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let pattern = prefix + "-%"
        while ContinuousClock.now < deadline {
            let (covered, unfinished) = try await pool.withConnection { connection in
                let row = try connection.query("""
                    SELECT count(DISTINCT experiment_id), count(*) FILTER (WHERE status <> 'done') FROM experiment_runs
                    WHERE experiment_id LIKE \(pattern)
                    """)[0]
                return (try row.decode(0, as: Int.self), try row.decode(1, as: Int.self))
            }
            if covered == experiments && unfinished == 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw FaultTestError("scheduled runs were not all done within \(timeout)")
    }

    /// One run per experiment, done, with one decision in the event log, and the schedulers' logs
    /// say each was completed once, by one of them.
    static func expectEachCompletedOnce(_ pool: ConnectionPool, experiments: Int, schedulers: [EngageProcess],
                                        sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let runs = try await pool.withConnection { connection in
            try connection.query("SELECT id, status FROM experiment_runs ORDER BY id").rows.map {
                (try $0.decode(0, as: Int.self), try $0.decode(1, as: String.self))
            }
        }
        #expect(runs.count == experiments, sourceLocation: sourceLocation)
        #expect(runs.allSatisfy { $0.1 == "done" }, "\(runs)", sourceLocation: sourceLocation)
        let decisions = try await pool.withConnection { connection in
            try connection.query("SELECT (payload->>'run_id')::int8 FROM events WHERE type = 'experiment_analysed' ORDER BY 1")
                .rows.map { try $0.decode(0, as: Int.self) }
        }
        #expect(decisions == runs.map(\.0), sourceLocation: sourceLocation)
        let completions = schedulers.flatMap { completedRunIDs($0.log) }
        #expect(completions.sorted() == runs.map(\.0), "run ids logged as done: \(completions.sorted())", sourceLocation: sourceLocation)
    }

    /// The `run.id` of every `scheduler.run.done` line of a scheduler's log.
    static func completedRunIDs(_ log: String) -> [Int] {
        log.split(separator: "\n").filter { $0.contains("scheduler.run.done") }.compactMap { line in
            guard let range = line.range(of: #"run\.id=[0-9]+"#, options: .regularExpression) else { return nil }
            return Int(line[range].dropFirst("run.id=".count))
        }
    }
}
