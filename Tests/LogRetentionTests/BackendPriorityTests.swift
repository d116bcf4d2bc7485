import EngageCore
import Foundation
import LogRetention
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

/// The prune lowers the priority of its own PostgreSQL backend when the server is on this machine
/// (the harness's is): a local server's backends share one scheduling group, where the prune
/// process's own niceness does not reach.
@Suite("Prune backend priority")
struct BackendPriorityTests {
    @Test func thePruneRunsOnABackendLoweredToItsNicenessAndNamedForIt() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 4, tag: "old"), daysAgo: 45)
        struct Seen: Sendable { var pid: Int32; var niceness: Int32?; var name: String }
        let seen = Mutex<Seen?>(nil)
        // A check runs on the prune's connection, after its backend was lowered and before anything goes.
        let look: LogPruner.Check = { connection, _ in
            let row = try connection.query("""
                SELECT pid, application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()
                """)[0]
            let pid = Int32(try row.decode(0, as: Int.self))
            let name = try row.decode(1, as: String.self)
            seen.withLock { $0 = Seen(pid: pid, niceness: ProcessPriority.niceness(of: pid), name: name) }
            return []
        }
        var pruner = fixtures.pruner(olderThan: 31, checks: [look])
        var configuration = pruner.configuration
        configuration.backendNiceness = 7
        pruner = LogPruner(pool: fixtures.pool, configuration: configuration, logger: pruner.logger)

        let report = try await pruner.run()

        #expect(report.events == 8)
        let during = try #require(seen.withLock { $0 })
        #expect(during.name == "engage log prune")
        #expect(during.niceness == 7)
        #expect(report.backend?.pid == during.pid)
        // Lowered from the harness server's niceness (that of the test run, below 7).
        guard case .lowered(let from)? = report.backend?.outcome else {
            Issue.record("the backend was not lowered: \(String(describing: report.backend))")
            return
        }
        #expect(from < 7)
        #expect(report.backend?.description(niceness: 7) == "PostgreSQL backend \(during.pid) at niceness 7")
    }

    @Test func aPruneAskedForNoNicenessLeavesItsBackendAlone() async throws {
        let fixtures = try RetentionFixtures()
        try await fixtures.seed(RetentionFixtures.events(notifications: 2, tag: "old"), daysAgo: 45)
        let niceness = Mutex<Int32?>(nil)
        let look: LogPruner.Check = { connection, _ in
            let pid = Int32(try connection.query("SELECT pg_backend_pid()")[0].decode(0, as: Int.self))
            niceness.withLock { $0 = ProcessPriority.niceness(of: pid) }
            return []
        }
        let report = try await fixtures.pruner(olderThan: 31, checks: [look]).run()
        #expect(report.events == 4)
        #expect(report.backend == nil)
        #expect(niceness.withLock { $0 } == ProcessPriority.current)
    }

    @Test func anotherProcessIsLoweredOnlyByItsOwnNameAndOnlyDownwards() throws {
        // A child that waits on its standard input until the test closes it.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/cat")
        let input = Pipe()
        child.standardInput = input
        child.standardOutput = FileHandle.nullDevice
        try child.run()
        defer {
            try? input.fileHandleForWriting.close()
            child.waitUntilExit()
        }
        let pid = child.processIdentifier
        let start = try #require(ProcessPriority.niceness(of: pid))
        #expect(start < 5)

        #expect(ProcessPriority.lower(process: pid, named: "postgres", to: 5) == .notFound)
        #expect(ProcessPriority.niceness(of: pid) == start)
        #expect(ProcessPriority.lower(process: pid, named: "cat", to: 5) == .lowered(from: start))
        #expect(ProcessPriority.niceness(of: pid) == 5)
        #expect(ProcessPriority.lower(process: pid, named: "cat", to: 3) == .alreadyLower(5))
        #expect(ProcessPriority.niceness(of: pid) == 5)
        #expect(ProcessPriority.lower(process: 0, named: "cat", to: 5) == .notFound)
    }
}
