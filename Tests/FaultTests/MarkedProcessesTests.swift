import EmbeddedPostgres
import Foundation
import Glibc
import Testing
import TestSupport

/// How the failover tests find a formation's processes to kill (`AutoFailoverFormation`): by a
/// mark in their environment, which a PostgreSQL server's children no longer show once they
/// set their titles, so by descent too. Found by the mark alone, a killed monitor's logger and
/// health-check worker outlived their postmaster by 14 minutes after a CI run.
@Suite("Faults: the processes a mark finds include every descendant")
struct MarkedProcessesTests {
    @Test(.timeLimit(.minutes(2)))
    func aMarkedPostmasterBringsEveryProcessItStarted() throws {
        let workspace = try FaultWorkspace("marked")
        defer { workspace.remove() }
        let cluster = try EmbeddedPostgres(options: .init(dataDirectory: workspace.file("pg"), database: "marked", settings: ["fsync": "off"]))
        #expect(try cluster.start() == .started)
        defer { try? cluster.stop(mode: "immediate") }
        let postmaster = try cluster.postmasterPID()

        // A postmaster forks and reaps short-lived children (autovacuum workers) at any time:
        // what both readings of the tree around the mark's saw is what the mark must bring.
        let before = Set(LocalSystem.processTree(of: postmaster))
        let found = Set(LocalSystem.processes { $0 == postmaster })
        let after = Set(LocalSystem.processTree(of: postmaster))
        let lasting = before.intersection(after)

        #expect(lasting.count > 1, "a running postmaster has its checkpointer and writers")
        #expect(found.isSuperset(of: lasting), "missing: \(lasting.subtracting(found).map(LocalSystem.describe))")
        // One born after the first reading and gone before the second belongs too.
        let strangers = found.subtracting(before.union(after)).filter(LocalSystem.isRunning)
        #expect(strangers.isEmpty, "not of the tree: \(strangers.map(LocalSystem.describe))")
    }

    /// A marked shell whose children run with an empty environment (`env -i`), as a server's
    /// children overwrite theirs: the Swift search and the `sh` one the exit watcher runs both
    /// stop the whole tree, and nothing else.
    @Test(.timeLimit(.minutes(2)))
    func theSwiftAndTheShellSearchStopAMarkedTreeWhoseChildrenShowNoMark() async throws {
        let workspace = try FaultWorkspace("marked-tree")
        defer { workspace.remove() }
        let mark = "ENGAGE_TEST_MARK=\(UUID().uuidString)"
        let marked = MarkedProcesses(mark: mark)
        let name = String(mark.prefix { $0 != "=" }), value = String(mark.drop { $0 != "=" }.dropFirst())
        let shell = try ChildProcess(["/bin/sh", "-c", "env -i /bin/sleep 120 & env -i /bin/sleep 120 & wait"],
                                     environment: ["PATH": "/usr/bin:/bin", name: value], outputPath: workspace.file("shell.log"))
        defer { for pid in LocalSystem.processTree(of: shell.pid) { kill(pid, SIGKILL) } }
        let deadline = ContinuousClock.now + .seconds(30)
        while LocalSystem.processTree(of: shell.pid).filter({ LocalSystem.executable(of: $0) == "/usr/bin/sleep" }).count < 2 {
            guard ContinuousClock.now < deadline else { throw FaultTestError("the shell started no two sleeps within 30 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        let tree = Set(LocalSystem.processTree(of: shell.pid))
        #expect(tree.count == 3)

        #expect(Set(marked.running()) == tree)

        let script = marked.stopScript + "\nstop_marked\necho \"$stopped\""
        let outcome = try ProcessRunner.run(["/bin/sh", "-c", script])
        let stoppedByShell = Set(outcome.output.split(whereSeparator: \.isWhitespace).compactMap { Int32($0) })
        #expect(outcome.status == 0, "\(outcome.output)")
        #expect(stoppedByShell == tree, "the shell stopped \(stoppedByShell.map(LocalSystem.describe))")
        #expect(tree.allSatisfy(LocalSystem.isStopped), "\(tree.map(LocalSystem.describe))")
        for pid in tree { kill(pid, SIGCONT) }

        #expect(Set(marked.stopAll()) == tree)
        #expect(tree.allSatisfy(LocalSystem.isStopped), "\(tree.map(LocalSystem.describe))")
        marked.killAll()
        #expect(marked.running().isEmpty)
        #expect(await shell.waitForExit(timeout: .seconds(30)) != nil)
    }
}
