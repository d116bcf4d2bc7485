import Foundation
import Testing
import TestSupport

/// A seed's event ids are the same for every app, and the log keeps an id once across apps: the
/// same seed run for a second app with `--direct` stores nothing, and its summary said "0
/// rejected" as if every event had gone somewhere. They are counted as the API counts them.
@Suite("engage simulate --direct: the same seed for a second app")
struct SimulateSecondAppTests {
    @Test(.timeLimit(.minutes(2)))
    func eventsOfAnotherAppsIDsAreCountedRejected() async throws {
        let workspace = try FaultWorkspace("simulate-second-app")
        defer { workspace.remove() }
        let database = try await offPool { try TestPostgres.freshDatabase() }
        func simulate(app: String) async throws -> String {
            let run = try await CommandLineOptionsTests.engage(["simulate", "--direct", "--app", app, "--notifications", "200", "--seed", "7",
                                                                "--database", database.connectionString], in: workspace)
            try #require(run.status == 0, "\(run.output)")
            return try #require(run.output.split(separator: "\n").first { $0.hasPrefix("simulated 200 notifications:") }.map(String.init),
                                "\(run.output)")
        }
        let first = try await simulate(app: "first")
        let second = try await simulate(app: "second")
        let counts = try #require(second.firstMatch(of: /(\d+) events sent, (\d+) accepted, (\d+) duplicates, (\d+) rejected/), "\(second)")
        #expect(counts.output.2 == "0" && counts.output.3 == "0", "\(second)")
        #expect(counts.output.4 == counts.output.1 && counts.output.1 != "0", "\(first) / \(second)")
    }

    /// A run cut short by its deadline says so in words any command's user can act on (the demo,
    /// which has no `--max-seconds`, was told "stopped at --max-seconds").
    @Test(.timeLimit(.minutes(2)))
    func aRunCutShortNamesItsDeadline() async throws {
        let workspace = try FaultWorkspace("simulate-deadline")
        defer { workspace.remove() }
        let database = try await offPool { try TestPostgres.freshDatabase() }
        let run = try await CommandLineOptionsTests.engage(["simulate", "--direct", "--notifications", "1000000", "--max-seconds", "1",
                                                            "--database", database.connectionString], in: workspace)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("(stopped at the deadline, 1 s: the rest of the day was not sent)"), "\(run.output)")
    }
}
