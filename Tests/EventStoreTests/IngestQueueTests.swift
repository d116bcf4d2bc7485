import EngageCore
@testable import EventStore
import Foundation
import Testing
import TestSupport

/// When a group may start beside a running commit, and when it waits for it. Time is moved by
/// hand: a committer parked behind a running commit can be woken only by what the test names.
@Suite("Ingest queue")
struct IngestQueueTests {
    static func batch(_ events: Int) -> PreparedBatch {
        PreparedBatch((0..<events).map { index in
            AppendItem(appID: "app-1", event: EventFactory.event(notification: "n-\(index)"))
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

    /// A one-event commit running and one event queued behind it.
    struct OneQueuedBehindARunningCommit {
        var first: Task<AppendResult, Error>
        var running: [IngestQueue.Entry]
        var second: Task<AppendResult, Error>
    }

    static func oneQueuedBehindARunningCommit(on queue: IngestQueue) async throws -> OneQueuedBehindARunningCommit {
        let first = Task { try await queue.submit(Self.batch(1)) }
        let running = try #require(await Self.take(queue))
        let second = Task { try await queue.submit(Self.batch(1)) }
        try await pollUntil { queue.depth == 1 }
        return OneQueuedBehindARunningCommit(first: first, running: running, second: second)
    }

    /// Commits `group` beside the running commit, and waits for both requests' answers.
    static func finish(_ group: [IngestQueue.Entry], beside queued: OneQueuedBehindARunningCommit, on queue: IngestQueue) async throws {
        commit(group, queued.running, on: queue)
        _ = try await (queued.first.value, queued.second.value)
    }

    /// The same, and a committer parked waiting for the running commit.
    static func committerWaitingBehindARunningCommit(on queue: IngestQueue)
        async throws -> (OneQueuedBehindARunningCommit, waiting: Task<[IngestQueue.Entry]?, Never>) {
        let queued = try await oneQueuedBehindARunningCommit(on: queue)
        let waiting = Task { await Self.take(queue) }
        try await pollUntil { queue.parkedCommitters.waiting == 1 }
        return (queued, waiting)
    }

    /// A queue on time that moves only when the test moves it.
    static func queue(parallelCommitEvents: Int = 100, stalledCommitAfter: Duration = .milliseconds(50),
                      time: ManualTime = ManualTime()) -> IngestQueue {
        IngestQueue(limits: .init(parallelCommitEvents: parallelCommitEvents, stalledCommitAfter: stalledCommitAfter), time: time)
    }

    /// Behind stuck commits, a batch that waited longer than the commit timeout is refused
    /// (503 for its request) rather than left to wait for a commit of its own.
    @Test(.timeLimit(.minutes(1)))
    func batchesQueuedTooLongAreRefusedAndTheYoungerStay() async throws {
        let time = ManualTime()
        let queue = Self.queue(time: time)
        let started = time.now
        let older = Task { try await queue.submit(Self.batch(2)) }
        try await pollUntil { queue.depth == 2 }
        time.advance(by: .seconds(1))
        let younger = Task { try await queue.submit(Self.batch(3)) }
        try await pollUntil { queue.depth == 5 }

        #expect(queue.expire(queuedBefore: started) == 0, "nothing was queued before the start")
        #expect(queue.expire(queuedBefore: started + .milliseconds(500)) == 1)
        await #expect(throws: IngestQueue.Refusal.timedOut) { try await older.value }
        #expect(queue.depth == 3)
        let group = try #require(await Self.take(queue))
        #expect(group.map(\.batch.rowCount) == [3])
        #expect(group[0].queuedAt == started + .seconds(1))
        Self.commit(group, on: queue)
        #expect(try await younger.value.storedCount == 3)
    }

    @Test(.timeLimit(.minutes(1)))
    func aSmallBacklogWaitsForTheRunningCommit() async throws {
        let queue = Self.queue()
        let first = Task { try await queue.submit(Self.batch(1)) }
        let running = try #require(await Self.take(queue))
        #expect(running.count == 1)

        let second = Task { try await queue.submit(Self.batch(1)) }
        let third = Task { try await queue.submit(Self.batch(1)) }
        try await pollUntil { queue.depth == 2 }
        let next = Task { await Self.take(queue) }
        // The committer looked, and parked behind the running commit rather than take the two.
        try await pollUntil { queue.parkedCommitters.waiting == 1 }
        #expect(queue.depth == 2, "a second commit started for two waiting events")

        Self.commit(running, on: queue)
        let group = try #require(await next.value)
        #expect(group.count == 2)
        Self.commit(group, on: queue)
        #expect(try await [first.value, second.value, third.value].map(\.storedCount) == [1, 1, 1])
    }

    @Test(.timeLimit(.minutes(1)))
    func aStalledCommitLetsASmallBacklogGoBesideIt() async throws {
        let time = ManualTime()
        let queue = Self.queue(stalledCommitAfter: .milliseconds(200), time: time)
        let queued = try await Self.oneQueuedBehindARunningCommit(on: queue)
        let beside = Task { await Self.take(queue) }
        // Parked until the running commit counts as stalled, 200 ms after it was taken.
        try await pollUntil { queue.parkedCommitters.waiting == 1 && time.sleepers == 1 }
        time.advance(by: .milliseconds(199))
        #expect(time.sleepers == 1, "woken before the running commit counted as stalled")
        #expect(queue.depth == 1)
        time.advance(by: .milliseconds(1))
        let group = try #require(await beside.value)
        #expect(group.count == 1)
        #expect(queue.depth == 0)
        try await Self.finish(group, beside: queued, on: queue)
    }

    @Test(.timeLimit(.minutes(1)))
    func aLargeBacklogCommitsBesideTheRunningOne() async throws {
        let queue = Self.queue()
        let first = Task { try await queue.submit(Self.batch(1)) }
        let running = try #require(await Self.take(queue))
        let large = Task { try await queue.submit(Self.batch(150)) }
        // Time stands still: only the backlog rule can let this group start beside the running one.
        let beside = try #require(await Self.take(queue))
        #expect(beside.map(\.batch.rowCount) == [150])
        Self.commit(beside, running, on: queue)
        #expect(try await large.value.storedCount == 150)
        #expect(try await first.value.storedCount == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func aBacklogGrowingPastTheThresholdWakesAWaitingCommitterAtOnce() async throws {
        let queue = Self.queue()
        let (parked, waiting) = try await Self.committerWaitingBehindARunningCommit(on: queue)
        #expect(queue.depth == 1, "a second commit started for one waiting event")

        let large = Task { try await queue.submit(Self.batch(150)) }
        // Time stands still, so the running commit never counts as stalled: the submit woke it.
        let beside = try #require(await waiting.value)
        #expect(beside.map(\.batch.rowCount) == [1, 150])
        Self.commit(beside, parked.running, on: queue)
        #expect(try await [parked.first.value, parked.second.value, large.value].map(\.storedCount) == [1, 1, 150])
    }

    @Test(.timeLimit(.minutes(1)))
    func aFinishedGroupWakesTheCommitterWaitingBehindIt() async throws {
        let queue = Self.queue()
        let (parked, waiting) = try await Self.committerWaitingBehindARunningCommit(on: queue)
        #expect(queue.depth == 1)

        Self.commit(parked.running, on: queue)
        let next = try #require(await waiting.value)
        #expect(next.count == 1)
        Self.commit(next, on: queue)
        _ = try await (parked.first.value, parked.second.value)
    }

    @Test(.timeLimit(.minutes(1)))
    func closingWakesParkedCommitters() async throws {
        let queue = Self.queue()
        let idle = Task { await Self.take(queue) }
        try await pollUntil { queue.parkedCommitters.idle == 1 }
        queue.close()
        #expect(await idle.value == nil)

        let other = Self.queue()
        let (parked, waiting) = try await Self.committerWaitingBehindARunningCommit(on: other)
        other.close()
        let drained = try #require(await waiting.value)
        #expect(drained.count == 1)
        try await Self.finish(drained, beside: parked, on: other)
    }

    @Test(.timeLimit(.minutes(1)))
    func closingDrainsWhatWaitsBehindARunningCommit() async throws {
        let queue = Self.queue()
        let queued = try await Self.oneQueuedBehindARunningCommit(on: queue)
        queue.close()
        let drained = try #require(await Self.take(queue))
        #expect(drained.count == 1)
        try await Self.finish(drained, beside: queued, on: queue)
        #expect(await Self.take(queue) == nil)
        await #expect(throws: IngestQueue.Refusal.closed) { try await queue.submit(Self.batch(1)) }
    }

    @Test(.timeLimit(.minutes(1)))
    func aFullQueueRefusesWhatWouldGoPastItsCapacity() async throws {
        let queue = IngestQueue(limits: .init(capacity: 10), time: ManualTime())
        let waiting = Task { try await queue.submit(Self.batch(8)) }
        try await pollUntil { queue.depth == 8 }
        await #expect(throws: IngestQueue.Refusal.full) { try await queue.submit(Self.batch(3)) }
        let fits = Task { try await queue.submit(Self.batch(2)) }
        try await pollUntil { queue.depth == 10 }
        queue.close()
        let drained = try #require(await Self.take(queue))
        #expect(drained.map(\.batch.rowCount) == [8, 2])
        Self.commit(drained, on: queue)
        #expect(try await [waiting.value, fits.value].map(\.storedCount) == [8, 2])
    }
}
