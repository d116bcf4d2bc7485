import Foundation
import Postgres
import Testing
import TestSupport

/// `engage experiment show` names the latest analysed run however many runs failed or wait after
/// it (a day of hourly failures): it looked among the 50 newest runs only and said "none yet",
/// where the console showed the decision.
@Suite("engage experiment show: the latest run")
struct ExperimentShowLatestRunTests {
    @Test(.timeLimit(.minutes(2)))
    func theLatestAnalysedRunIsFoundBehindManyFailedOnes() async throws {
        let workspace = try FaultWorkspace("experiment-show")
        defer { workspace.remove() }
        let database = try await offPool { try TestPostgres.freshDatabase() }
        let onDatabase = ["--database", database.connectionString]
        let id = try await workspace.createdExperiment(prefix: "show", on: database)
        let run = try await CommandLineOptionsTests.engage(["experiment", "run", id] + onDatabase, in: workspace)
        try #require(run.status == 0, "\(run.output)")
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        let analysed = try connection.query("SELECT id FROM experiment_runs WHERE experiment_id = \(id) AND status = 'done'")[0].decode(0, as: Int64.self)
        try connection.execute("""
            INSERT INTO experiment_runs (experiment_id, scheduled_for, status, finished_at, error)
            SELECT \(id), now() + make_interval(hours => n), 'failed', now(), 'not analysed: test'
            FROM generate_series(1, 60) AS n
            """)

        let shown = try await CommandLineOptionsTests.engage(["experiment", "show", id] + onDatabase, in: workspace)

        #expect(shown.status == 0, "\(shown.output)")
        #expect(shown.output.contains("latest run:  \(analysed),"), "\(shown.output)")
        #expect(!shown.output.contains("none yet"), "\(shown.output)")
    }
}
