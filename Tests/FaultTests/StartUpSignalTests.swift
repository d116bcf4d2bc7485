import EmbeddedPostgres
import Foundation
import Testing
import TestSupport

/// A Ctrl-C (or SIGTERM) while `engage serve` starts its local PostgreSQL, before its services
/// listen for signals: its default action ended engage at once, and the cluster it had started
/// (in a session of its own, out of the terminal's reach) ran on for good; every later run found
/// it running, did not own it, and so never stopped it either. Held now, and acted on once the
/// start is over: the cluster is stopped again.
@Suite("Local PostgreSQL: a signal during start-up")
struct StartUpSignalTests {
    @Test(.timeLimit(.minutes(3)))
    func aCtrlCWhileTheLocalClusterStartsStopsItAgain() async throws {
        let workspace = try FaultWorkspace("startup-signal")
        defer { workspace.remove() }
        let dataDirectory = workspace.file("pg")
        let engage = try ChildProcess(
            [try BuiltProgram.path("engage"), "serve", "--data-dir", dataDirectory, "--listen", "127.0.0.1:0",
             "--projector", "off", "--scheduler", "off", "--console", "off"],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": workspace.path],
            outputPath: workspace.file("serve.log"))
        let cluster = try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: dataDirectory))
        defer { try? cluster.stop(mode: "immediate") }
        // The server has been launched once its pid file is there; the migrations come next.
        try await pollUntil(every: .milliseconds(5)) {
            FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid") || !engage.isRunning
        }
        engage.signal(SIGINT)
        let status = await engage.waitForExit(timeout: .seconds(90))
        // Ended by engage, 130, when the start was under way (a process the signal itself ended
        // reads 130 too, but says nothing); 0 had it begun serving just before: a graceful stop.
        #expect((status == 130 && engage.output.contains("engage: stopped by SIGINT while starting the local PostgreSQL")) || status == 0,
                "\(String(describing: status)): \(engage.output)")
        // Stopped (pg_ctl stop waits for the server to remove its pid file), not starting or running:
        // a server still starting may not answer pg_ctl status yet, but its pid file is there.
        #expect(!FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid"), "\(engage.output)")
        #expect(try cluster.status() == .stopped, "\(engage.output)")
    }
}
