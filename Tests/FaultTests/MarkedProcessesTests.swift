import EmbeddedPostgres
import Foundation
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
        #expect(found.isSubset(of: before.union(after)), "not of the tree: \(found.subtracting(before.union(after)))")
    }
}
