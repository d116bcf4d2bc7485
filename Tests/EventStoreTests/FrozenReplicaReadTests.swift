import EngageCore
@testable import EventStore
import Foundation
import Glibc
import Postgres
import Runtime
import Testing
import TestSupport

/// A read replica that stops answering altogether (every process of the standby stopped with
/// SIGSTOP: a machine frozen, a network that drops everything, its connections left open) is
/// left for the primary, as one that went away is, instead of holding every read until it
/// answers again. A pair of this suite's own, since it freezes the standby.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FrozenReplicaReadTests {
    @Test func aReplicaThatDoesNotAnswerIsLeftForThePrimary() async throws {
        let replication = try await offPool { try StreamingReplication(label: "es-frozen") }
        let (primary, replica) = try await offPool { try replication.freshDatabase() }
        let primaryPool = ConnectionPool(configuration: primary, size: 2)
        let replicaPool = ConnectionPool(configuration: replica, size: 2)
        let registry = MetricsRegistry()
        let reads = ReadDatabase(primary: primaryPool, replica: replicaPool, configuration: .init(),
                                 logger: Logger(label: "test", level: .info, sink: MemoryLogSink()),
                                 metrics: ReadReplicaMetrics(registry: registry))
        let inRecovery: @Sendable (ConnectionPool) async throws -> Bool = { pool in
            try await pool.withConnection { try $0.query("SELECT pg_is_in_recovery()")[0].decode(0) }
        }
        // Read on the replica: its pool holds a connection that will look sound once frozen.
        #expect(try await reads.read(inRecovery).source == ReadSource(database: .replica, lag: .zero))

        let pidFile = try String(contentsOfFile: replication.replica.dataDirectory + "/postmaster.pid", encoding: .utf8)
        let postmaster = try #require(pidFile.split(separator: "\n").first.flatMap { Int32($0) })
        var freeze = ProcessTreeFreeze(root: postmaster)
        defer { for pid in freeze.signalled { Glibc.kill(pid, SIGCONT) } }
        try await pollUntil(every: .milliseconds(20)) { freeze.step() }

        let started = ContinuousClock.now
        let frozen = try await withTimeLimit(.seconds(30)) { try await reads.read(inRecovery) }
        let took = ContinuousClock.now - started
        #expect(frozen?.value == false && frozen?.source == ReadSource(database: .primary, lag: .zero, fallback: .replicaUnreachable),
                "\(String(describing: frozen)) after \(took)")
        #expect(took < .seconds(10), "the read took \(took) with the replica frozen")
        // Left alone for a while: the next read goes to the primary without waiting.
        let next = ContinuousClock.now
        #expect(try await reads.read(inRecovery).source.fallback == .replicaUnreachable)
        #expect(ContinuousClock.now - next < .seconds(1))

        let running = freeze.signalled.filter { !ProcessTreeFreeze.cannotRun($0) }
        #expect(running.isEmpty, "processes of the frozen standby ran: \(running.map(LocalSystem.describe))")
        for pid in freeze.signalled { Glibc.kill(pid, SIGCONT) }
        await primaryPool.close()
        await replicaPool.close()
        try? await offPool { try replication.stopReplica() }
    }
}
