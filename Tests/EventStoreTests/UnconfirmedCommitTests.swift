import EngageCore
@testable import EventStore
import Foundation
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

/// Commits a synchronous standby never confirms. The primary waits for `nobody` (a standby that
/// does not exist) at every commit, as it waits for a lost standby: a cancelled wait reports
/// success with a warning and must not count as stored; a commit that waits too long is
/// interrupted; a retry that finds such events waits until they are durable. A pair of this
/// suite's own (`StreamingReplication`), since every commit on it stops.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct UnconfirmedCommitTests {
    static let pair = Result { try StreamingReplication(label: "sync") }
    static let logger = Logger(label: "test", level: .error, sink: MemoryLogSink())

    static func replication() async throws -> StreamingReplication {
        try await offPool { try pair.get() }
    }

    @Test func aCommitWhoseWaitForTheStandbyIsCancelledIsNotConfirmedNorIsItsRetry() async throws {
        let (replication, database) = try await Self.databaseWaitingForNobody()
        defer { try? replication.synchronousStandby(nil) }
        let items = EventFactory.items(3, notificationPrefix: "cancelled")

        // The fast path: one COPY, its own transaction.
        let first = Task { try await offPool { try Self.appendOnce(items, database) } }
        try await Self.cancelTheWaitingCommit(replication)
        let refused = await #expect(throws: PostgresError.self) { try await first.value }
        #expect(refused?.kind == .unconfirmedCommit)
        #expect(refused?.sqlState == "01000")
        // Committed on the primary alone: exactly why it must not be acknowledged.
        #expect(try Self.storedCount(database) == 3)

        // The retry finds the events, and still waits for the standby before it says so.
        let retry = Task { try await offPool { try Self.appendOnce(items, database) } }
        try await Self.cancelTheWaitingCommit(replication)
        #expect((await #expect(throws: PostgresError.self) { try await retry.value })?.kind == .unconfirmedCommit)

        // Once commits are confirmed again (here: no standby required), the retry reports them.
        try await offPool { try replication.synchronousStandby(nil) }
        let confirmed = try await offPool { try Self.appendOnce(items, database) }
        #expect(confirmed.outcomes == [.duplicate, .duplicate, .duplicate])
        #expect(try Self.storedCount(database) == 3)
    }

    @Test func aStuckGroupCommitTimesOutUnacknowledgedAndCommitsResumeOnceTheStandbyAnswers() async throws {
        let (replication, database) = try await Self.databaseWaitingForNobody()
        defer { try? replication.synchronousStandby(nil) }
        let time = ManualTime()
        let registry = MetricsRegistry()
        let (queue, running) = Self.committing(on: database, committers: 2, commitTimeout: .seconds(2), time: time, registry: registry)

        let items = EventFactory.items(3, notificationPrefix: "stuck")
        let answer = try await Self.answerToAStuckCommit(items, queue: queue, replication: replication, time: time)
        #expect((try? answer.get()) == nil, "a commit the standby never confirmed was acknowledged")
        #expect((answer.error as? PostgresError)?.kind == .interrupted)
        #expect(registry.renderPrometheus().contains("engage_ingest_commit_timeouts_total 1"))

        // The client's retry waits behind the abandoned commit, which the server still holds...
        let retry = Task { try await queue.submit(PreparedBatch(items)) }
        try await pollUntil {
            try replication.withPrimary { connection in
                try connection.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'transactionid'")[0].decode(0, as: Int.self)
            } == 1
        }
        // ...until the primary stops waiting for a standby: then it goes through, once.
        try await offPool { try replication.synchronousStandby(nil) }
        #expect(try await retry.value.outcomes == [.duplicate, .duplicate, .duplicate])
        #expect(try await queue.submit(PreparedBatch(EventFactory.items(2, notificationPrefix: "fresh"))).storedCount == 2)
        #expect(try Self.storedCount(database) == 5)
        running.cancel()
        try await running.value
    }

    /// A request queued behind a stuck commit is answered about one commit timeout after it was
    /// queued (refused from the queue, or its own commit interrupted), never acknowledged, and not
    /// after the stuck commit's timeout and then a whole timeout of its own.
    @Test func aRequestQueuedBehindAStuckCommitIsAnsweredOneTimeoutAfterItWasQueued() async throws {
        let (replication, database) = try await Self.databaseWaitingForNobody()
        defer { try? replication.synchronousStandby(nil) }
        let time = ManualTime()
        let start = time.now
        // One committer, so that the watchdog (looking every second of this clock) is the only
        // sleeper: time moves on only once it waits again, so its looks fall on whole seconds.
        let (queue, running) = Self.committing(on: database, committers: 1, commitTimeout: .seconds(4), time: time)
        try await pollUntil { time.sleepers == 1 }

        let stuckItems = EventFactory.items(3, notificationPrefix: "stuck")
        let stuck = Results(), behind = Results()
        queue.submit(PreparedBatch(stuckItems)) { stuck.append($0) }
        try await pollUntil { try replication.commitsWaitingForStandby() == 1 }
        time.advance(by: .milliseconds(500))
        let behindItems = EventFactory.items(2, notificationPrefix: "behind")
        queue.submit(PreparedBatch(behindItems)) { behind.append($0) }
        #expect(queue.depth == 2)

        while behind.all.isEmpty {
            try await pollUntil { time.sleepers == 1 || !behind.all.isEmpty }
            if behind.all.isEmpty { time.advance(by: .milliseconds(500)) }
        }
        let waited = start.duration(to: time.now) - .milliseconds(500)
        #expect((try? stuck.all.first?.get()) == nil, "a commit the standby never confirmed was acknowledged")
        let answer = try #require(behind.all.first)
        #expect((try? answer.get()) == nil, "a request behind the stuck commit was acknowledged")
        if case .failure(let error) = answer {
            #expect(error as? IngestQueue.Refusal == .timedOut || (error as? PostgresError)?.kind == .interrupted, "\(error)")
        }
        // One timeout and a look or two of the watchdog: 4.5 s (refused from the queue) or 5.5 s
        // (its own commit interrupted). The stuck commit's timeout and then a whole one of its
        // own would be 9.5 s.
        #expect(waited > .seconds(4) && waited < .seconds(8), "answered \(waited) after it was queued")

        // The clients resend; once the primary stops waiting for a standby, each event is stored once.
        try await offPool { try replication.synchronousStandby(nil) }
        #expect(try await queue.submit(PreparedBatch(stuckItems)).outcomes.count == 3)
        #expect(try await queue.submit(PreparedBatch(behindItems)).outcomes.count == 2)
        #expect(try Self.storedCount(database) == 5)
        running.cancel()
        try await running.value
    }

    /// A request holding an event PostgreSQL refuses is stored half by half
    /// (`EventStore.appendIsolatingRefusedRows`), each half a commit of its own: a half's commit
    /// stuck waiting for the standby is interrupted as any commit is, and is a commit timeout like
    /// any other (counted and logged), not a silent failure.
    /// The resend, once the standby answers, stores the rest once and refuses the one event.
    @Test func aStuckCommitWhileIsolatingARefusedEventIsACommitTimeout() async throws {
        let (replication, database) = try await Self.databaseWaitingForNobody(before: RefusingConstraint.add(to:))
        defer { try? replication.synchronousStandby(nil) }
        let time = ManualTime()
        let registry = MetricsRegistry()
        let (queue, running) = Self.committing(on: database, committers: 1, commitTimeout: .seconds(2), time: time, registry: registry)

        var items = EventFactory.items(4, notificationPrefix: "isolating")
        items[1].event.category = RefusingConstraint.category
        let answer = try await Self.answerToAStuckCommit(items, queue: queue, replication: replication, time: time)
        #expect((try? answer.get()) == nil, "a commit the standby never confirmed was acknowledged")
        #expect((answer.error as? PostgresError)?.kind == .interrupted)
        #expect(registry.renderPrometheus().contains("engage_ingest_commit_timeouts_total 1"))

        try await offPool { try replication.synchronousStandby(nil) }
        let again = try await queue.submit(PreparedBatch(items))
        #expect(again.outcomes.count(where: { $0 == .refused(sqlState: RefusingConstraint.sqlState) }) == 1)
        #expect(again.outcomes[1] == .refused(sqlState: RefusingConstraint.sqlState))
        #expect(try Self.storedCount(database) == 3)
        running.cancel()
        try await running.value
    }

    // MARK: Helpers

    /// A fresh database on the pair's primary, which from now on waits for `nobody` at every
    /// commit (the caller resets it: `synchronousStandby(nil)`). `prepare` runs on the database
    /// before, while its commits still go through.
    static func databaseWaitingForNobody(
        before prepare: @escaping @Sendable (PostgresConfiguration) throws -> Void = { _ in }
    ) async throws -> (StreamingReplication, PostgresConfiguration) {
        let replication = try await Self.replication()
        let (database, _) = try await offPool { try replication.freshDatabase() }
        try await offPool { try prepare(database) }
        try await offPool { try replication.synchronousStandby("nobody") }
        return (replication, database)
    }

    /// Submits `items` to committers whose commit then waits for the standby, and moves `time` on
    /// (by hand) until the watchdog gives up on the commit: the answer the request got.
    static func answerToAStuckCommit(_ items: [AppendItem], queue: IngestQueue, replication: StreamingReplication,
                                     time: ManualTime) async throws -> Result<AppendResult, Error> {
        let answers = Results()
        queue.submit(PreparedBatch(items)) { answers.append($0) }
        try await pollUntil { try replication.commitsWaitingForStandby() == 1 }
        while answers.all.isEmpty {
            time.advance(by: .milliseconds(500))
            try await Task.sleep(for: .milliseconds(10))
        }
        return try #require(answers.all.first)
    }

    /// Committers on `database` under a hand-moved clock, their queue, and the task running them
    /// until it is cancelled.
    static func committing(on database: PostgresConfiguration, committers: Int, commitTimeout: Duration, time: ManualTime,
                           registry: MetricsRegistry = MetricsRegistry()) -> (IngestQueue, Task<Void, Error>) {
        let queue = IngestQueue(time: time)
        let committer = Committer(queue: queue, database: database, metrics: CommitterMetrics(registry: registry),
                                  committers: committers, commitTimeout: commitTimeout, time: time, logger: logger)
        return (queue, Task { try await committer.run() })
    }

    /// A session terminated while its commit waits for the standby (as a fast shutdown ends it):
    /// PostgreSQL warns "The transaction has already committed locally" and closes it. The events
    /// are stored on the primary, so the append is unconfirmed (`commit-unconfirmed`), not a lost
    /// database (`database-unavailable`, "nothing from this request was stored"); so is the
    /// resend's, on the careful path.
    @Test func aCommitWhoseSessionIsTerminatedWhileItWaitsIsUnconfirmed() async throws {
        let (replication, database) = try await Self.databaseWaitingForNobody()
        defer { try? replication.synchronousStandby(nil) }
        let items = EventFactory.items(3, notificationPrefix: "terminated")
        for path in ["fast", "careful"] {
            let append = Task { try await offPool { try Self.appendOnce(items, database) } }
            try await Self.terminateTheWaitingCommit(replication)
            let refused = await #expect(throws: PostgresError.self, "\(path)") { try await append.value }
            #expect(refused?.kind == .unconfirmedCommit, "\(path): \(String(describing: refused))")
            #expect(try Self.storedCount(database) == 3)
        }
    }

    static func terminateTheWaitingCommit(_ replication: StreamingReplication) async throws {
        try await pollUntil { try replication.commitsWaitingForStandby() == 1 }
        try await offPool {
            try replication.withPrimary { connection in
                _ = try connection.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
            }
        }
    }

    static func appendOnce(_ items: [AppendItem], _ database: PostgresConfiguration) throws -> AppendResult {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try EventStore.append(items, on: connection)
    }

    static func storedCount(_ database: PostgresConfiguration) throws -> Int {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try connection.query("SELECT count(*) FROM events").rows[0].decode(0)
    }

    /// Waits for one commit waiting for the standby, then cancels that wait as an operator would.
    static func cancelTheWaitingCommit(_ replication: StreamingReplication) async throws {
        try await pollUntil { try replication.commitsWaitingForStandby() == 1 }
        try await offPool {
            try replication.withPrimary { connection in
                _ = try connection.query("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
            }
        }
    }

}

extension Result {
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
