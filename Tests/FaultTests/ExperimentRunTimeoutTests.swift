import Foundation
import Postgres
import Testing
import TestSupport

/// `engage experiment run` on a primary waiting at the COMMIT for a synchronous standby that is
/// gone: the run's insert is made there but never answered, and the command ends within the
/// scheduler's database answer limit (30 s), saying the run may have been queued, instead of
/// waiting as long as the primary does. A pair of this suite's own (`StreamingReplication`).
///
/// The command migrates the database first (`DatabaseSetup.open`), and the migrator re-applies
/// the view scripts each time: their commit is the primary's own (`synchronous_commit = local`),
/// or the command would wait there, without a limit, before the run.
@Suite("Faults: a manual run bounded by the scheduler's answer limit", .serialized)
struct ExperimentRunTimeoutTests {
    static let pair = Result { try StreamingReplication(label: "clirunbound") }

    @Test(.timeLimit(.minutes(3)))
    func aRunWhoseInsertWaitsForALostStandbyEndsSayingItMayBeQueued() async throws {
        let replication = try await offPool { try Self.pair.get() }
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let workspace = try FaultWorkspace("experiment-run-timeout")
        defer { workspace.remove() }
        let id = try await workspace.createdExperiment(prefix: "bound", on: database)
        let onDatabase = ["--database", database.connectionString]
        try await offPool { try replication.synchronousStandby("nobody") }
        defer { try? replication.synchronousStandby(nil) }

        // Within CommandLineOptionsTests.engage's minute, or it throws saying it still runs.
        let run = try await CommandLineOptionsTests.engage(["experiment", "run", id] + onDatabase, in: workspace)
        try await offPool { try replication.synchronousStandby(nil) }
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("a run of \(id) may have been queued but not answered (the database did not answer within 30.0 seconds)"),
                "\(run.output)")
        // Queued: once the primary stops waiting, the runs list it.
        try await pollUntil(every: .milliseconds(100)) {
            try await CommandLineOptionsTests.engage(["experiment", "runs", id] + onDatabase, in: workspace).output.contains("pending")
        }
    }
}
