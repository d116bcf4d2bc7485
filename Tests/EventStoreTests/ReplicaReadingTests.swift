import EngageCore
@testable import EventStore
import Foundation
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

/// Reading on a hot standby made with `pg_basebackup -R` (`StreamingReplication`, a pair of this
/// suite's own, since it pauses replay and stops the standby): the log read there stays gapless,
/// the lag is measured, and reads fall back to the primary when the standby is behind or gone.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ReplicaReadingTests {
    static let pair = Result { try StreamingReplication(label: "es") }

    static func replication() async throws -> StreamingReplication {
        try await offPool { try pair.get() }
    }

    @Test func tailingTheReplicaNeverSkipsWhileWritersCommitOutOfOrderOnThePrimary() async throws {
        let replication = try await Self.replication()
        let (primary, replica) = try await offPool { try replication.freshDatabase() }
        let replicaStore = EventStore(pool: ConnectionPool(configuration: replica, size: 1))
        let writers = 6, batchesPerWriter = 25
        // Finished only once the standby replayed every writer's commit.
        let reader = LogTail()
        let tail = Task { try await reader.run(replicaStore) }
        try await OutOfOrderWriters.run(writers, batches: batchesPerWriter, on: primary) { writer, batch in
            EventFactory.items(Int.random(in: 1...8), notificationPrefix: "w\(writer)-\(batch)")
        }
        try await offPool { try replication.waitForReplay() }
        reader.finish()
        let tailed = try await tail.value
        #expect(tailed.repeated.isEmpty && tailed.isInLogOrder)
        let full = try await EventStore(pool: ConnectionPool(configuration: primary, size: 1)).read(after: .start, limit: 100_000)
        #expect(full.count >= writers * batchesPerWriter)
        #expect(tailed.order.count == full.count)
        #expect(Dictionary(uniqueKeysWithValues: full.map { ($0.position, $0.eventID) }) == tailed.events)
        await replicaStore.pool.close()
    }

    @Test func lagIsZeroWhenCaughtUpAndTheTimeSinceTheLastReplayedCommitWhenBehind() async throws {
        let replication = try await Self.replication()
        let (primary, replica) = try await offPool { try replication.freshDatabase() }
        let primaryPool = ConnectionPool(configuration: primary, size: 1)
        let replicaPool = ConnectionPool(configuration: replica, size: 1)
        _ = try await EventStore(pool: primaryPool).append(EventFactory.items(3))
        try await offPool { try replication.waitForReplay() }
        #expect(try await replicaPool.withConnection { try ReplicaLag.measure(on: $0) } == .zero)
        // The primary itself: never behind.
        #expect(try await primaryPool.withConnection { try ReplicaLag.measure(on: $0) } == .zero)

        try await offPool { try replication.pauseReplay() }
        defer { try? replication.resumeReplay() }
        let lastReplayed = try await replicaPool.withConnection { connection in
            try connection.query("SELECT extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8")[0]
                .decode(0, as: Double.self)
        }
        _ = try await EventStore(pool: primaryPool).append(EventFactory.items(2, notificationPrefix: "later"))
        try await offPool { try replication.waitUntilBehind() }
        let behind = try #require(try await replicaPool.withConnection { try ReplicaLag.measure(on: $0) })
        // At least the age the last replayed commit already had before the primary went on.
        #expect(behind >= .milliseconds(Int64(lastReplayed * 1000)))
        #expect(behind > .zero)

        try await offPool { try replication.resumeReplay() }
        try await offPool { try replication.waitForReplay() }
        #expect(try await replicaPool.withConnection { try ReplicaLag.measure(on: $0) } == .zero)
        await primaryPool.close()
        await replicaPool.close()
    }

    @Test func readsGoToTheReplicaWhenFreshAndToThePrimaryWhenItLagsOrIsGone() async throws {
        let replication = try await Self.replication()
        let (primary, replica) = try await offPool { try replication.freshDatabase() }
        let primaryPool = ConnectionPool(configuration: primary, size: 2)
        let replicaPool = ConnectionPool(configuration: replica, size: 2)
        let registry = MetricsRegistry()
        let sink = MemoryLogSink()
        let time = ManualTime()
        let reads = ReadDatabase(primary: primaryPool, replica: replicaPool,
                                 configuration: .init(maxLag: .milliseconds(200), retryUnreachableAfter: .seconds(5)),
                                 time: time, logger: Logger(label: "test", level: .info, sink: sink),
                                 metrics: ReadReplicaMetrics(registry: registry))
        let inRecovery: @Sendable (ConnectionPool) async throws -> Bool = { pool in
            try await pool.withConnection { try $0.query("SELECT pg_is_in_recovery()")[0].decode(0) }
        }
        _ = try await EventStore(pool: primaryPool).append(EventFactory.items(3))
        try await offPool { try replication.waitForReplay() }

        #expect(registry.renderPrometheus().contains("engage_read_replica_lag_seconds -1\n"), "unknown until measured")
        let fresh = try await reads.read(inRecovery)
        #expect(registry.renderPrometheus().contains("engage_read_replica_lag_seconds 0\n"))
        #expect(fresh.value == true)
        #expect(fresh.source == ReadSource(database: .replica, lag: .zero))
        #expect(sink.lines.isEmpty)

        // Behind by more than the bound: the primary answers, and says why.
        try await offPool { try replication.pauseReplay() }
        _ = try await EventStore(pool: primaryPool).append(EventFactory.items(2, notificationPrefix: "later"))
        try await offPool { try replication.waitUntilBehind() }
        try await pollUntil(every: .milliseconds(20)) {
            try await replicaPool.withConnection { try ReplicaLag.measure(on: $0) }.map { $0 > .milliseconds(200) } ?? true
        }
        let lagging = try await reads.read(inRecovery)
        #expect(lagging.value == false)
        #expect(lagging.source == ReadSource(database: .primary, lag: .zero, fallback: .replicaLagging))
        #expect(sink.lines.count == 1 && sink.lines[0].contains("read-replica.fallback") && sink.lines[0].contains("reason=replica_lagging"),
                "\(sink.lines)")
        _ = try await reads.read(inRecovery)
        #expect(sink.lines.count == 1, "one warning when falling back starts, not one per read")
        #expect(registry.renderPrometheus().contains(#"engage_read_replica_fallbacks_total{reason="replica_lagging"} 2"#))

        try await offPool { try replication.resumeReplay() }
        try await offPool { try replication.waitForReplay() }
        #expect(try await reads.read(inRecovery).source.database == .replica)
        #expect(sink.lines.last?.contains("read-replica.serving") == true)

        // Gone: the primary answers at once, and the replica is left alone for a while.
        try await offPool { try replication.stopReplica() }
        let gone = try await reads.read(inRecovery)
        #expect(gone.value == false)
        #expect(gone.source == ReadSource(database: .primary, lag: .zero, fallback: .replicaUnreachable))
        #expect(registry.renderPrometheus().contains("engage_read_replica_lag_seconds -1\n"), "unknown while unreachable")
        try await offPool { try replication.startReplica() }
        try await offPool { try replication.waitForReplay() }
        #expect(try await reads.read(inRecovery).source.fallback == .replicaUnreachable, "tried again too soon")
        time.advance(by: .seconds(5))
        #expect(try await reads.read(inRecovery).source.database == .replica)
        let metrics = registry.renderPrometheus()
        #expect(metrics.contains(#"engage_read_replica_fallbacks_total{reason="replica_unreachable"} 2"#), "\(metrics)")
        #expect(metrics.contains("engage_read_replica_reads_total 3"), "\(metrics)")
        await primaryPool.close()
        await replicaPool.close()
    }

    @Test func sourcesReadAsJSONMembersAndSentences() {
        let replica = ReadSource(database: .replica, lag: .milliseconds(1_042))
        #expect(replica.jsonMember == #""read_from":{"database":"replica","lag_seconds":1.042,"fallback":null}"#)
        #expect(String(decoding: replica.addingMember(to: Array(#"{"a":1}"#.utf8)), as: UTF8.self)
                == #"{"a":1,"read_from":{"database":"replica","lag_seconds":1.042,"fallback":null}}"#)
        #expect(String(decoding: ReadSource.primary.addingMember(to: Array("{ }\n".utf8)), as: UTF8.self)
                == "{ " + #""read_from":{"database":"primary","lag_seconds":0.000,"fallback":null}"# + "}\n")
        let fellBack = ReadSource(database: .primary, lag: .zero, fallback: .replicaLagging)
        #expect(fellBack.jsonMember == #""read_from":{"database":"primary","lag_seconds":0.000,"fallback":"replica_lagging"}"#)
        #expect(replica.sentence == "Read from the read replica, 1.042 s behind the primary when read.")
        #expect(fellBack.sentence == "Read from the primary: the read replica was too far behind.")
        // The JSON parser of engage reads what it makes.
        #expect((try? JSON.parse(replica.addingMember(to: Array("{}".utf8)))) != nil)
    }
}
