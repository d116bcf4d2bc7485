import EngageCore
@testable import EventStore
import Foundation
import Testing

@testable import EngageAPI

/// When a group may start beside a running commit, and when it waits for it.
@Suite("Ingest queue")
struct IngestQueueTests {
    static func batch(_ events: Int) -> PreparedBatch {
        PreparedBatch((0..<events).map { index in
            AppendItem(appID: "app-1", event: Event(
                eventID: EventID(UUID()), notificationID: "n-\(index)", deviceID: "device-1", category: "new_photo",
                occurredAt: Timestamp(microsecondsSinceEpoch: 1_780_000_000_000_000), details: .expanded))
        })
    }

    /// Answers every request of a group as stored.
    static func answer(_ group: [IngestQueue.Entry]) {
        for entry in group {
            entry.complete(.success(AppendResult(outcomes: Array(repeating: .stored, count: entry.batch.itemCount))))
        }
    }

    /// Reports each group finished and answers its requests as stored, in the order given (and in
    /// that order within a group, as a committer does).
    static func commit(_ groups: [IngestQueue.Entry]..., on queue: IngestQueue) {
        for group in groups {
            queue.groupFinished()
            answer(group)
        }
    }

    /// `takeGroup` blocks its thread, as a committer's does: run it on a thread of its own.
    static func take(_ queue: IngestQueue, parkingOn parker: IngestQueue.Parker = IngestQueue.Parker()) async -> [IngestQueue.Entry]? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: queue.takeGroup(parkingOn: parker)) }.start()
        }
    }

    static func waitForDepth(_ queue: IngestQueue, _ depth: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while queue.depth != depth {
            try #require(ContinuousClock.now < deadline, "depth stays \(queue.depth), expected \(depth)")
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// A one-event commit running, one event queued behind it, and a committer parked waiting
    /// for the running commit (on a queue where a commit counts as stalled only after a minute).
    struct WaitingBehindARunningCommit {
        var first: Task<AppendResult, Error>
        var running: [IngestQueue.Entry]
        var second: Task<AppendResult, Error>
        var waiting: Task<[IngestQueue.Entry]?, Never>
    }

    static func committerWaitingBehindARunningCommit(on queue: IngestQueue) async throws -> WaitingBehindARunningCommit {
        let first = Task { try await queue.submit(Self.batch(1)) }
        let running = try #require(await Self.take(queue))
        let second = Task { try await queue.submit(Self.batch(1)) }
        try await Self.waitForDepth(queue, 1)
        let waiting = Task { await Self.take(queue) }
        try await Task.sleep(for: .milliseconds(100))
        return WaitingBehindARunningCommit(first: first, running: running, second: second, waiting: waiting)
    }

    static func queueStallingAfterAMinute() -> IngestQueue {
        IngestQueue(limits: .init(parallelCommitEvents: 100, stalledCommitAfter: .seconds(60)))
    }

    @Test(.timeLimit(.minutes(1)))
    func aSmallBacklogWaitsForTheRunningCommit() async throws {
        let queue = IngestQueue(limits: .init(parallelCommitEvents: 100, stalledCommitAfter: .seconds(60)))
        let first = Task { try await queue.submit(Self.batch(1)) }
        let running = try #require(await Self.take(queue))
        #expect(running.count == 1)

        let second = Task { try await queue.submit(Self.batch(1)) }
        let third = Task { try await queue.submit(Self.batch(1)) }
        try await Self.waitForDepth(queue, 2)
        let next = Task { await Self.take(queue) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(queue.depth == 2, "a second commit started for two waiting events")

        Self.commit(running, on: queue)
        let group = try #require(await next.value)
        #expect(group.count == 2)
        Self.commit(group, on: queue)
        #expect(try await [first.value, second.value, third.value].map(\.storedCount) == [1, 1, 1])
    }

    @Test(.timeLimit(.minutes(1)))
    func aStalledCommitLetsASmallBacklogGoBesideIt() async throws {
        let queue = IngestQueue(limits: .init(parallelCommitEvents: 100, stalledCommitAfter: .milliseconds(200)))
        let first = Task { try await queue.submit(Self.batch(1)) }
        let started = ContinuousClock.now
        let running = try #require(await Self.take(queue))
        let second = Task { try await queue.submit(Self.batch(1)) }
        let beside = try #require(await Self.take(queue))
        #expect(ContinuousClock.now - started >= .milliseconds(200), "taken before the running commit counted as stalled")
        #expect(beside.count == 1)
        Self.commit(beside, running, on: queue)
        _ = try await (first.value, second.value)
    }

    @Test(.timeLimit(.minutes(1)))
    func aLargeBacklogCommitsBesideTheRunningOne() async throws {
        let queue = IngestQueue(limits: .init(parallelCommitEvents: 100))
        let first = Task { try await queue.submit(Self.batch(1)) }
        let running = try #require(await Self.take(queue))
        let large = Task { try await queue.submit(Self.batch(150)) }
        let beside = try #require(await Self.take(queue))
        #expect(beside.map(\.batch.rowCount) == [150])
        Self.commit(beside, running, on: queue)
        #expect(try await large.value.storedCount == 150)
        #expect(try await first.value.storedCount == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func aBacklogGrowingPastTheThresholdWakesAWaitingCommitterAtOnce() async throws {
        let queue = Self.queueStallingAfterAMinute()
        let parked = try await Self.committerWaitingBehindARunningCommit(on: queue)
        #expect(queue.depth == 1, "a second commit started for one waiting event")

        let woken = ContinuousClock.now
        let large = Task { try await queue.submit(Self.batch(150)) }
        let beside = try #require(await parked.waiting.value)
        #expect(beside.map(\.batch.rowCount) == [1, 150])
        // Woken by the submit, not by the running commit counting as stalled a minute on.
        #expect(ContinuousClock.now - woken < .seconds(30))
        Self.commit(beside, parked.running, on: queue)
        #expect(try await [parked.first.value, parked.second.value, large.value].map(\.storedCount) == [1, 1, 150])
    }

    @Test(.timeLimit(.minutes(1)))
    func aFinishedGroupWakesTheCommitterWaitingBehindIt() async throws {
        let queue = Self.queueStallingAfterAMinute()
        let parked = try await Self.committerWaitingBehindARunningCommit(on: queue)
        #expect(queue.depth == 1)

        let woken = ContinuousClock.now
        Self.commit(parked.running, on: queue)
        let next = try #require(await parked.waiting.value)
        #expect(next.count == 1)
        #expect(ContinuousClock.now - woken < .seconds(30))
        Self.commit(next, on: queue)
        _ = try await (parked.first.value, parked.second.value)
    }

    @Test(.timeLimit(.minutes(1)))
    func closingWakesParkedCommitters() async throws {
        let queue = Self.queueStallingAfterAMinute()
        let idle = Task { await Self.take(queue) }
        try await Task.sleep(for: .milliseconds(100))
        queue.close()
        #expect(await idle.value == nil)

        let other = Self.queueStallingAfterAMinute()
        let parked = try await Self.committerWaitingBehindARunningCommit(on: other)
        let closed = ContinuousClock.now
        other.close()
        let drained = try #require(await parked.waiting.value)
        #expect(drained.count == 1)
        #expect(ContinuousClock.now - closed < .seconds(30))
        Self.commit(drained, parked.running, on: other)
        _ = try await (parked.first.value, parked.second.value)
    }

    @Test(.timeLimit(.minutes(1)))
    func closingDrainsWhatWaitsBehindARunningCommit() async throws {
        let queue = IngestQueue(limits: .init(parallelCommitEvents: 100))
        let first = Task { try await queue.submit(Self.batch(1)) }
        let running = try #require(await Self.take(queue))
        let second = Task { try await queue.submit(Self.batch(1)) }
        try await Self.waitForDepth(queue, 1)
        queue.close()
        let drained = try #require(await Self.take(queue))
        #expect(drained.count == 1)
        Self.commit(drained, running, on: queue)
        #expect(await Self.take(queue) == nil)
        await #expect(throws: IngestQueue.Refusal.closed) { try await queue.submit(Self.batch(1)) }
        _ = try await (first.value, second.value)
    }
}
