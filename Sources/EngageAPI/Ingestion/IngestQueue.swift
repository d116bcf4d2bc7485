import EventStore
import Synchronization

/// Group commit: requests hand in prepared batches and wait; committers take everything waiting
/// (up to a limit) and store it in one transaction, so many small requests share one commit.
/// Each request is answered only after the transaction holding its events committed.
///
/// A second commit starts beside a running one only for a backlog of `parallelCommitEvents` or
/// more, or once the running one has taken `stalledCommitAfter` (a lock wait, a slow fsync); a
/// smaller backlog waits for the running commit and goes in the next group. Measured on
/// the project's machine with single-event requests, two commits always side by side split the
/// waiting requests into twice as many groups of half the size, and each commit's fixed cost
/// made PostgreSQL spend about a third more CPU for the same throughput (BENCHMARKS.md); large
/// batches still overlap one group's fsync with the next group's COPY.
public final class IngestQueue: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Events waiting beyond this are refused (429) instead of queued.
        public var capacity: Int = 50_000
        /// Events per transaction.
        public var maxGroupEvents: Int = 10_000
        /// Events waiting before a commit starts while another is running.
        public var parallelCommitEvents: Int = 100
        /// How long a running commit may hold back a smaller backlog.
        public var stalledCommitAfter: Duration = .milliseconds(50)

        public init(capacity: Int = 50_000, maxGroupEvents: Int = 10_000, parallelCommitEvents: Int = 100,
                    stalledCommitAfter: Duration = .milliseconds(50)) {
            self.capacity = capacity
            self.maxGroupEvents = maxGroupEvents
            self.parallelCommitEvents = parallelCommitEvents
            self.stalledCommitAfter = stalledCommitAfter
        }
    }

    public enum Refusal: Error, Sendable, Equatable {
        /// Too many events are waiting: try again shortly.
        case full
        /// The server is shutting down.
        case closed
    }

    struct Entry: Sendable {
        var batch: PreparedBatch
        /// Called once, by the committer, when the group holding the batch committed or failed.
        var complete: @Sendable (Result<AppendResult, Error>) -> Void
    }

    private struct State {
        var entries: [Entry] = []
        var queuedEvents = 0
        var idleCommitters: [CheckedContinuation<Void, Never>] = []
        var closed = false
        /// Groups taken and not yet reported finished, and when the last was taken.
        var committing = 0
        var lastGroupTaken = ContinuousClock.now

        func mayTakeGroup(_ limits: Limits, now: ContinuousClock.Instant) -> Bool {
            !entries.isEmpty
                && (committing == 0 || closed || queuedEvents >= limits.parallelCommitEvents
                    || now - lastGroupTaken >= limits.stalledCommitAfter)
        }
    }

    public let limits: Limits
    private let state = Mutex(State())

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Events waiting for a committer.
    public var depth: Int { state.withLock { $0.queuedEvents } }

    /// Waits until the batch is durably stored (or refused, or failed).
    public func submit(_ batch: PreparedBatch) async throws -> AppendResult {
        try await withCheckedThrowingContinuation { continuation in
            submit(batch) { continuation.resume(with: $0) }
        }
    }

    /// Queues the batch without waiting: `complete` is called once, with the result, when the
    /// batch is durably stored or failed (on a committer's task), or at once with a ``Refusal``.
    public func submit(_ batch: PreparedBatch, complete: @escaping @Sendable (Result<AppendResult, Error>) -> Void) {
        let outcome = state.withLock { state -> Result<CheckedContinuation<Void, Never>?, Refusal> in
            if state.closed { return .failure(.closed) }
            if state.queuedEvents > 0 && state.queuedEvents + batch.rowCount > limits.capacity { return .failure(.full) }
            state.entries.append(Entry(batch: batch, complete: complete))
            state.queuedEvents += batch.rowCount
            return .success(state.idleCommitters.popLast())
        }
        switch outcome {
        case .failure(let refusal): complete(.failure(refusal))
        case .success(let committer): committer?.resume()
        }
    }

    /// The next group to commit; nil once the queue is closed and drained. The caller reports
    /// the group's end with `groupFinished()`.
    func takeGroup() async -> [Entry]? {
        while true {
            enum Next { case group([Entry]), finished, wait, waitForRunningCommit(Duration) }
            let now = ContinuousClock.now
            let next = state.withLock { state -> Next in
                if state.mayTakeGroup(limits, now: now) {
                    var taken = 0, events = 0
                    while taken < state.entries.count {
                        let size = state.entries[taken].batch.rowCount
                        if taken > 0 && events + size > limits.maxGroupEvents { break }
                        events += size
                        taken += 1
                    }
                    let group = Array(state.entries.prefix(taken))
                    state.entries.removeFirst(taken)
                    state.queuedEvents -= events
                    state.committing += 1
                    state.lastGroupTaken = now
                    return .group(group)
                }
                if state.closed && state.entries.isEmpty { return .finished }
                if !state.entries.isEmpty {
                    return .waitForRunningCommit(state.lastGroupTaken + limits.stalledCommitAfter - now)
                }
                return .wait
            }
            switch next {
            case .group(let group): return group
            case .finished: return nil
            case .waitForRunningCommit(let stalledIn):
                // Not parked, so that a stall is noticed without a timer: look again every 10 ms
                // (a hundred wake-ups a second, only while a backlog waits behind a commit).
                try? await Task.sleep(for: min(stalledIn, .milliseconds(10)))
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let wakeNow = state.withLock { state -> Bool in
                        if !state.entries.isEmpty || state.closed { return true }
                        state.idleCommitters.append(continuation)
                        return false
                    }
                    if wakeNow { continuation.resume() }
                }
            }
        }
    }

    /// A group taken by `takeGroup()` is committed (or failed): what waited behind it may go.
    func groupFinished() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.committing -= 1
            return state.mayTakeGroup(limits, now: .now) ? state.idleCommitters.popLast() : nil
        }
        next?.resume()
    }

    /// Refuses new batches; committers finish what is queued, then stop.
    public func close() {
        let idle = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            defer { state.idleCommitters.removeAll() }
            return state.idleCommitters
        }
        for committer in idle { committer.resume() }
    }
}
