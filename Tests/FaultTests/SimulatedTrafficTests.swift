import Foundation
import Testing
import TestSupport

/// `engage demo` and `engage simulate` send their simulated traffic through FoundationNetworking.
@Suite("engage demo and simulate: sending the simulated traffic")
struct SimulatedTrafficTests {
    /// On an IPv6 address (`--listen [::1]:port`, as the option's help shows it) the demo's own
    /// address needs its brackets, `http://[::1]:port`, and its traffic goes by name
    /// (FoundationNetworking refuses an IPv6 literal): before, the demo could not reach itself.
    @Test(.timeLimit(.minutes(3)))
    func theDemoOnIPv6LoopbackSendsItsDayToItself() async throws {
        let workspace = try FaultWorkspace("demo-ipv6")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let process = try EngageProcess(["demo", "--listen", "[::1]:0", "--notifications", "100", "--report-file", workspace.file("report.html")],
                                        database: database, workspace: workspace, name: "demo")
        let summary = try await process.poll(timeout: .seconds(150), what: "the demo's summary") { () -> String? in
            guard process.log.contains("engage keeps running at") else { return nil }
            return process.log.split(separator: "\n").first { $0.hasPrefix("simulated 100 notifications:") }.map(String.init)
        }
        #expect(process.log.contains("engage runs at http://[::1]:"), "\(process.log)")
        #expect(process.log.contains("engage keeps running at http://[::1]:"), "\(process.log)")
        let counts = try #require(summary.firstMatch(of: /(\d+) events sent, (\d+) accepted/), "\(summary)")
        #expect(Int(counts.output.2)! > 0 && counts.output.1 != "0", "\(summary)")
        #expect(try await process.terminate() == 0, "\(process.log)")
    }

    /// SIGTERM (or Ctrl-C) while the simulated day is still being sent stops the demo as it stops
    /// the server: exit 0, no error, and no "engage keeps running". Before, the server stopped and
    /// the demo went on sending to it, then failed ("could not reach engage") with status 1.
    @Test(.timeLimit(.minutes(3)))
    func aStopWhileTheDayIsSentStopsTheDemoCleanly() async throws {
        let workspace = try FaultWorkspace("demo-stop")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let process = try EngageProcess(["demo", "--listen", "127.0.0.1:0", "--notifications", "1000000",
                                         "--report-file", workspace.file("report.html")],
                                        database: database, workspace: workspace, name: "demo")
        try await process.poll(timeout: .seconds(120), what: "the demo sending its day") { () -> Bool? in
            process.log.contains("sending a simulated day") ? true : nil
        }
        let status = try await process.terminate(timeout: .seconds(60))
        #expect(status == 0, "\(process.log.suffix(2_000))")
        #expect(!process.log.contains("error:"), "\(process.log.suffix(2_000))")
        #expect(!process.log.contains("engage keeps running"), "\(process.log.suffix(2_000))")
    }

    /// Nothing listening: the command says which address it could not reach and exits 1. Through
    /// URLSession's async `data(for:)` it trapped or hung in about half the runs, hence four.
    @Test(.timeLimit(.minutes(5)), arguments: 1...4)
    func anAddressNobodyAnswersIsNamedAndEndsTheRun(run: Int) async throws {
        let workspace = try FaultWorkspace("simulate-refused")
        defer { workspace.remove() }
        let answer = try await CommandLineOptionsTests.engage(
            ["simulate", "--url", "http://127.0.0.1:1", "--key", "egk_x", "--notifications", "100", "--seed", String(run)], in: workspace)
        #expect(answer.status == 1, "\(answer.output)")
        #expect(answer.output.hasPrefix("error: could not reach engage at http://127.0.0.1:1: "), "\(answer.output)")
    }
}
