import Foundation
import Testing
import TestSupport

/// Commands whose database cannot be reached exit 69 (EX_UNAVAILABLE) saying so, so that a
/// script can tell "try again later" from a refusal (1) or a usage error (64).
@Suite("engage with its database unreachable")
struct UnreachableDatabaseCommandTests {
    /// Nothing listens on port 1 of the loopback: refused at once. The password must not be printed.
    static let refusingServer = "host=127.0.0.1 port=1 dbname=x connect_timeout=2 password=never-printed"
    static let refused = "cannot connect to host=127.0.0.1 port=1 dbname=x connect_timeout=2 password=***: "
        + #"connection to server at "127.0.0.1", port 1 failed: Connection refused"#

    /// Runs `arguments` on `database` and expects exit 69 and a standard error naming the database
    /// and then `connectionProblem`.
    private func expectUnreachable(_ arguments: [String], database: String, connectionProblem: String,
                                   in workspace: FaultWorkspace) async throws {
        let (status, output) = try await CommandLineOptionsTests.engage(arguments + ["--database", database], standardErrorOnly: true,
                                                                        in: workspace)
        #expect(status == 69, "\(output)")
        #expect(output.hasPrefix("error: the database could not be reached: postgres connection error: " + connectionProblem), "\(output)")
        #expect(!output.contains("never-printed"))
    }

    @Test(.timeLimit(.minutes(1)))
    func reportExits69NamingTheDatabase() async throws {
        let workspace = try FaultWorkspace("unreachable-report")
        defer { workspace.remove() }
        try await expectUnreachable(["report"], database: Self.refusingServer, connectionProblem: Self.refused, in: workspace)
    }

    @Test(.timeLimit(.minutes(1)))
    func experimentRunExits69NamingTheDatabase() async throws {
        let workspace = try FaultWorkspace("unreachable-run")
        defer { workspace.remove() }
        try await expectUnreachable(["experiment", "run", "x"], database: Self.refusingServer, connectionProblem: Self.refused, in: workspace)
    }

    @Test(.timeLimit(.minutes(1)))
    func aSocketDirectoryThatDoesNotExistIsUnreachableToo() async throws {
        let workspace = try FaultWorkspace("unreachable-socket")
        defer { workspace.remove() }
        let directory = workspace.file("no-such-directory")
        try await expectUnreachable(["experiment", "run", "x"], database: "host=\(directory) dbname=x",
                                    connectionProblem: "cannot connect to host=\(directory) dbname=x: connection to server on socket "
                                        + #""\#(directory)/.s.PGSQL.5432" failed: No such file or directory"#,
                                    in: workspace)
    }

    @Test(.timeLimit(.minutes(1)))
    func aUsageErrorStillExits64BeforeTheDatabaseIsTried() async throws {
        let workspace = try FaultWorkspace("unreachable-usage")
        defer { workspace.remove() }
        let (status, output) = try await CommandLineOptionsTests.engage(["report", "--since", "2026-13-01", "--database", Self.refusingServer],
                                                                        standardErrorOnly: true, in: workspace)
        #expect(status == 64)
        #expect(output.hasPrefix("error: invalid value '2026-13-01' for option '--since': expected a date such as 2026-11-29\nusage: engage report"),
                "\(output)")
    }
}
