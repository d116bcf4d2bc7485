import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

/// `engage experiment create|start|stop --commit-timeout` (engage serve's option and variable):
/// a change ends within it, and the exit status says whether it was made: 75 when nothing changed
/// (retry), 3 when it was made on the primary but not confirmed on the synchronous standbys (read
/// it back first), 1 when it was refused (the experiment's status does not allow it).
@Suite("Faults: experiment changes bounded by the commit timeout")
struct ExperimentCommandTimeoutTests {
    @Test(.timeLimit(.minutes(2)))
    func aChangeEndsWithinItsTimeoutAndItsExitStatusSaysWhetherItWasMade() async throws {
        let workspace = try FaultWorkspace("experiment-timeout")
        defer { workspace.remove() }
        let database = try await offPool { try TestPostgres.freshDatabase() }
        let id = try await workspace.createdExperiment(prefix: "bound", on: database)
        let onDatabase = ["--database", database.connectionString]

        // Another session holds the experiment's row: the start cannot reach its COMMIT.
        let blocker = try Connection(configuration: database)
        defer { blocker.close() }
        try blocker.execute("BEGIN")
        _ = try blocker.query("SELECT 1 FROM experiments WHERE id = \(id) FOR UPDATE")
        let started = ContinuousClock.now
        // engage serve's variable sets it, as the option does.
        let locked = try await CommandLineOptionsTests.engage(["experiment", "start", id] + onDatabase,
                                                              environment: ["ENGAGE_COMMIT_TIMEOUT": "2"], in: workspace)
        #expect(ContinuousClock.now - started < .seconds(20))
        _ = try blocker.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
            """)
        try blocker.execute("ROLLBACK")
        #expect(locked.status == 75, "\(locked.output)")
        #expect(locked.output.contains("nothing was changed") && locked.output.contains("within 2.0 seconds"), "\(locked.output)")
        let shown = try await CommandLineOptionsTests.engage(["experiment", "show", id, "--format", "json"] + onDatabase, in: workspace)
        #expect(shown.status == 0 && shown.output.contains(#""status":"draft""#), "\(shown.output)")

        // Made on the primary alone (the test cluster has no standby), well within the timeout.
        let unconfirmed = try await CommandLineOptionsTests.engage(
            ["experiment", "start", id, "--synchronous-standbys", "1", "--commit-timeout", "20"] + onDatabase, in: workspace)
        #expect(unconfirmed.status == 3, "\(unconfirmed.output)")
        #expect(unconfirmed.output.contains("was made on the primary"), "\(unconfirmed.output)")
        let refused = try await CommandLineOptionsTests.engage(["experiment", "start", id] + onDatabase, in: workspace)
        #expect(refused.status == 1 && refused.output.contains("only a draft can be started"), "\(refused.output)")
    }

    /// The case the option is for: a primary waiting at every COMMIT for a synchronous standby
    /// it lost. The command must reach its change and end within `--commit-timeout` (exit 3: made
    /// on the primary, not confirmed), not wait for ever before it, in a commit of its own start
    /// (the views it replaces on every run: `Migrator` commits them on the primary alone).
    @Test(.timeLimit(.minutes(3)))
    func aChangeOnAPrimaryWaitingForALostStandbyEndsWithinItsTimeout() async throws {
        let workspace = try FaultWorkspace("experiment-timeout-standby")
        defer { workspace.remove() }
        let replication = try await offPool { try Self.pair.get() }
        let (database, _) = try await offPool { try replication.freshDatabase() }
        let id = try await workspace.createdExperiment(prefix: "lost", on: database)
        let onDatabase = ["--database", database.connectionString]
        try await offPool { try replication.synchronousStandby("nobody") }
        defer { try? replication.synchronousStandby(nil) }

        let started = ContinuousClock.now
        let start = try await CommandLineOptionsTests.engage(["experiment", "start", id, "--commit-timeout", "2"] + onDatabase,
                                                             in: workspace)
        let waited = ContinuousClock.now - started
        // What the command tells the operator to run next answers during the outage too.
        let shown = try await CommandLineOptionsTests.engage(["experiment", "show", id] + onDatabase, in: workspace)
        try await offPool { try replication.synchronousStandby(nil) }
        #expect(shown.status == 0, "\(shown.output)")
        #expect(start.status == 3, "\(start.output)")
        #expect(start.output.contains("was made on the primary"), "\(start.output)")
        #expect(waited < .seconds(20), "ended after \(waited)")
        // Made: once the primary stops waiting for a standby, the experiment reads back running.
        try await pollUntil(every: .milliseconds(100)) {
            try await CommandLineOptionsTests.engage(["experiment", "show", id, "--format", "json"] + onDatabase, in: workspace)
                .output.contains(#""status":"running""#)
        }
    }

    /// An experiment command migrates a database that lacks its migrations, as every command that
    /// opens one does.
    @Test(.timeLimit(.minutes(2)))
    func aCommandStillMigratesADatabaseThatLacksItsMigrations() async throws {
        let workspace = try FaultWorkspace("experiment-migrates")
        defer { workspace.remove() }
        let database = try await offPool { try TestPostgres.freshDatabase(migrated: false) }
        let listed = try await CommandLineOptionsTests.engage(["experiment", "list", "--database", database.connectionString],
                                                              in: workspace)
        #expect(listed.status == 0, "\(listed.output)")
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        #expect(try Migrator.fromSQLDirectory().pendingProblem(connection) == nil)
    }

    /// A pair of this suite's own: every commit on it stops while it waits for `nobody`.
    static let pair = Result { try StreamingReplication(label: "clibound") }

    @Test func theHelpOfEachChangeNamesTheTimeoutAndTheExitStatuses() async throws {
        let workspace = try FaultWorkspace("experiment-timeout-help")
        defer { workspace.remove() }
        for command in ["create", "start", "stop"] {
            let (status, help) = try await CommandLineOptionsTests.engage(["help", "experiment", command], in: workspace)
            let flattened = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(status == 0 && flattened.contains("--commit-timeout") && flattened.contains("(env: ENGAGE_COMMIT_TIMEOUT)"), "\(help)")
            #expect(flattened.contains("exit status 75") && flattened.contains("exit status 3"), "\(command): \(help)")
        }
    }
}
