import EmbeddedPostgres
import Foundation
import Glibc
import Testing
import TestSupport

/// The fault tests' freeze (`ProcessTreeFreeze`, SIGSTOP to a whole tree) against a tree that
/// forks all the time, as a postmaster starting backends for new connections does. The freeze
/// ShutdownTests used before let a child born while the tree was being read escape (11 of 40
/// rounds of this test on a quiet machine): a "frozen" PostgreSQL then went on committing, and
/// engage rightly acknowledged what it committed.
@Suite("Faults: freezing a process tree that keeps forking")
struct ProcessTreeFreezeTests {
    /// A shell forks a child every few milliseconds (each sleeps long enough to be seen if it
    /// escaped); once the freeze reports the tree stopped, no process of it may run. Several
    /// rounds, since each freeze meets a fork in the wrong instant only sometimes.
    @Test(.timeLimit(.minutes(2)))
    func noProcessOfTheTreeRunsOnceTheFreezeReportsItStopped() async throws {
        let workspace = try FaultWorkspace("freeze")
        defer { workspace.remove() }
        for round in 0..<12 {
            // Forks until told to stop (or for a minute at most), then waits for its children:
            // nothing is left for init to reap (which it does not here), and however late this
            // task runs on a busy machine, the shell is still forking when it looks. Every child
            // is started in the background: dash starts a foreground command with vfork, and a
            // vfork child stopped before its exec leaves its parent waiting uninterruptibly, never
            // stopped (PostgreSQL's postmaster forks).
            let stop = workspace.file("stop-\(round)")
            let script = "i=0; while [ ! -e '\(stop)' ] && [ $i -lt 6000 ]; do sleep 0.3 & sleep 0.01 & wait $!; i=$((i+1)); done; wait"
            let shell = try ChildProcess(["/bin/sh", "-c", script], environment: ["PATH": "/usr/bin:/bin"],
                                         outputPath: workspace.file("shell-\(round).log"))
            // Whatever happens, the tree runs on and the shell stops forking and ends.
            defer {
                _ = FileManager.default.createFile(atPath: stop, contents: nil)
                for pid in LocalSystem.processTree(of: shell.pid) { Glibc.kill(pid, SIGCONT) }
            }
            try await waitFor("the shell to be forking") { LocalSystem.processTree(of: shell.pid).count >= 4 }
            var freeze = ProcessTreeFreeze(root: shell.pid)
            try await waitFor("the tree to stop") { freeze.step() }

            let running = LocalSystem.processTree(of: shell.pid).filter { !ProcessTreeFreeze.cannotRun($0) }
            #expect(running.isEmpty, "round \(round): processes ran on after the freeze: \(running.map(LocalSystem.describe))")

            _ = FileManager.default.createFile(atPath: stop, contents: nil)
            for pid in LocalSystem.processTree(of: shell.pid) { Glibc.kill(pid, SIGCONT) }
            #expect(await shell.waitForExit(timeout: .seconds(30)) == 0, "the shell did not finish: \(shell.output)")
        }
    }

    private func waitFor(_ what: String, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw FaultTestError("no \(what) within 20 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
