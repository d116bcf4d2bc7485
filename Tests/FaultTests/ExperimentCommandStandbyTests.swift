import Foundation
import Testing
import TestSupport

/// `engage experiment create|start|stop --synchronous-standbys 1` on a primary that runs alone
/// (the test cluster has no standby): the change is made on the primary but not acknowledged, and
/// the command says so and fails; `engage experiment show` then finds what was made.
@Suite("Faults: experiment changes when a synchronous standby is required")
struct ExperimentCommandStandbyTests {
    @Test(.timeLimit(.minutes(2)))
    func aChangeThePrimaryMadeAloneFailsTheCommandAndSaysWhy() async throws {
        let workspace = try FaultWorkspace("experiment-standbys")
        defer { workspace.remove() }
        let database = try await offPool { try TestPostgres.freshDatabase() }
        let id = "alone-\(UUID().uuidString.prefix(8).lowercased())"
        let file = try workspace.experimentDefinition(id: id)
        let onDatabase = ["--database", database.connectionString]

        let created = try await CommandLineOptionsTests.engage(["experiment", "create", "--file", file, "--synchronous-standbys", "1"] + onDatabase,
                                                               in: workspace)
        // 3: made, not confirmed (a refusal is 1, nothing changed within --commit-timeout 75).
        #expect(created.status == 3, "\(created.output)")
        #expect(created.output.contains("fewer synchronous standbys than configured have the transaction"), "\(created.output)")
        #expect(!created.output.contains("created experiment"), "\(created.output)")
        // As the API and the console do, it says the change was made and how to see it before a repeat.
        #expect(created.output.contains("was made on the primary") && created.output.contains("engage experiment show"), "\(created.output)")
        let shown = try await CommandLineOptionsTests.engage(["experiment", "show", id, "--format", "json"] + onDatabase, in: workspace)
        #expect(shown.status == 0 && shown.output.contains(#""status":"draft""#), "\(shown.output)")

        let started = try await CommandLineOptionsTests.engage(["experiment", "start", id, "--synchronous-standbys", "1"] + onDatabase,
                                                               in: workspace)
        #expect(started.status == 3 && started.output.contains("fewer synchronous standbys"), "\(started.output)")
        #expect(started.output.contains("engage experiment show \(id)"), "\(started.output)")
        // Without the option the server's own setting, which asks for no standby, is trusted.
        let stopped = try await CommandLineOptionsTests.engage(["experiment", "stop", id] + onDatabase, in: workspace)
        #expect(stopped.status == 0 && stopped.output.contains("stopped \(id)"), "\(stopped.output)")
    }
}

/// The help of `engage experiment create|start|stop --synchronous-standbys` speaks of what the
/// command changes, not of events and ingestion (the option is `engage serve`'s, reused).
@Suite("Help: experiment changes' --synchronous-standbys")
struct ExperimentCommandStandbyHelpTests {
    @Test func theOptionSpeaksOfTheExperimentsChange() async throws {
        let workspace = try FaultWorkspace("experiment-standbys-help")
        defer { workspace.remove() }
        for command in ["create", "start", "stop"] {
            let (status, help) = try await CommandLineOptionsTests.engage(["help", "experiment", command], in: workspace)
            let flattened = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(status == 0 && flattened.contains("--synchronous-standbys"), "\(help)")
            #expect(flattened.contains("before the experiment's change is acknowledged"), "\(command): \(help)")
            #expect(!flattened.contains("ingestion") && !flattened.contains("its events"), "\(command): \(help)")
        }
    }
}
