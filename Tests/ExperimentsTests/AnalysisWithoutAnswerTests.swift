import EngageCore
import Experiments
import Glibc
import Postgres
import Testing
import TestSupport

/// An analysis whose database stops answering, or cannot be reached, ends with an error instead
/// of waiting for ever (each test failed by its time limit before).
@Suite("Experiment analysis: a database that does not answer")
struct AnalysisWithoutAnswerTests {
    static let definition = ExperimentDefinition(
        id: "thumbs-v1", appID: "demo",
        arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
               ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.5)],
        primaryMetric: .open, startAt: Fixtures.time("2026-03-01T00:00:00Z"))

    /// Both of the pool's connections lead to backends that stop answering (stopped with SIGSTOP,
    /// as a frozen host's are; their kernel still keeps the connections open): the replay's and
    /// CUPED's pre-period's reads end once nothing came for the silence limit.
    @Test(.timeLimit(.minutes(1)))
    func readsThatGetNoAnswerEndAfterTheSilenceLimit() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        var backends: Set<Int32> = []
        for _ in 0..<50 where backends.count < 2 {
            backends = try await withThrowingTaskGroup(of: Int32.self) { group in
                for _ in 0..<2 {
                    group.addTask { try await pool.withConnection { _ = try $0.query("SELECT pg_sleep(0.1)"); return $0.backendPID } }
                }
                return try await group.reduce(into: []) { $0.insert($1) }
            }
        }
        try #require(backends.count == 2, "the pool's two connections were never in use at once")
        let frozen = backends
        for pid in frozen { #expect(kill(pid, SIGSTOP) == 0) }
        defer { for pid in frozen { kill(pid, SIGCONT) } }
        // Not what is checked: should the reads wait for ever again, the backends go on after
        // this, the analysis ends without the error expected, and the suite does not hang.
        let release = Task {
            try await Task.sleep(for: .seconds(40))
            for pid in frozen { kill(pid, SIGCONT) }
        }
        defer { release.cancel() }

        let runner = ExperimentRunner(pool: pool, lanes: 2, silenceLimit: .seconds(2))
        await #expect(throws: DatabaseDidNotAnswer.self) {
            _ = try await runner.analyse(Self.definition, previousRuns: 0, now: Fixtures.time("2026-03-08T00:00:00Z"))
        }
        for pid in frozen { kill(pid, SIGCONT) }
        await pool.close()
    }

    /// A replay split over two connections whose first cannot be had (nothing listens): the
    /// other lanes waited for a snapshot that would never be published.
    @Test(.timeLimit(.minutes(1)))
    func aSplitReplayWhoseFirstLaneCannotConnectFails() async throws {
        let pool = ConnectionPool(configuration: PostgresConfiguration(
            connectionString: "host=127.0.0.1 port=1 dbname=engage user=engage connect_timeout=5"), size: 2)
        let runner = ExperimentRunner(pool: pool, lanes: 2)
        await #expect(throws: PostgresError.self) {
            _ = try await runner.analyse(Self.definition, previousRuns: 0, now: Fixtures.time("2026-03-08T00:00:00Z"))
        }
        await pool.close()
    }
}
