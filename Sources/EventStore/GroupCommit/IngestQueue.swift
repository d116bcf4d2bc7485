import Dispatch
import Runtime
import Synchronization

/// Group commit: requests hand in prepared batches and wait; committers take everything waiting
/// (up to a limit) and store it in one transaction, so many small requests share one commit.
/// Each request is answered only after the transaction holding its events committed.
///
/// A second commit starts beside a running one only for a backlog of `parallelCommitEvents` or
/// more, or once the running one has taken `stalledCommitAfter` (a lock wait, a slow fsync); a
/// smaller backlog waits for the running commit and goes in the next group. Small requests
/// committed two groups at a time would make twice as many groups of half the size, and each
/// commit has a fixed cost in PostgreSQL; large batches still gain from overlapping one group's
/// fsync with the next group's COPY (BENCHMARKS.md, "Group commit").
public final class IngestQueue: BatchAppending {
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
        /// Waited for a commit longer than the commit timeout, the committers being stuck (a
        /// primary waiting for a lost standby, a server that stopped answering): try again.
        case timedOut
    }

    struct Entry: Sendable {
        var batch: PreparedBatch
        var queuedAt: ContinuousClock.Instant
        /// Called once, by the committer, when the group holding the batch committed or failed.
        var complete: @Sendable (Result<AppendResult, Error>) -> Void
    }

    /// How a committer thread waits for work: parked until a submit (or a finished group) wakes
    /// it, or until a deadline.
    final class Parker: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)

        init() {}

        func park(until deadline: ContinuousClock.Instant?, on time: any TimeSource) {
            guard let deadline else { return semaphore.wait() }
            _ = time.wait(for: semaphore, until: deadline)
        }

        func unpark() {
            semaphore.signal()
        }
    }

    private struct State {
        var entries: [Entry] = []
        var queuedEvents = 0
        /// Committers parked on an empty queue: the next submit wakes one.
        var idleCommitters: [Parker] = []
        /// Committers parked behind a running commit until it counts as stalled: woken early
        /// only when a group may start beside it.
        var waitingCommitters: [Parker] = []
        var closed = false
        /// Groups taken and not yet reported finished, and when the last was taken.
        var committing = 0
        var lastGroupTaken: ContinuousClock.Instant

        /// `now` is read only when the answer depends on it: submits call this once per request.
        func mayTakeGroup(_ limits: Limits, now: @autoclosure () -> ContinuousClock.Instant) -> Bool {
            !entries.isEmpty
                && (committing == 0 || closed || queuedEvents >= limits.parallelCommitEvents
                    || now() - lastGroupTaken >= limits.stalledCommitAfter)
        }

        /// A parked committer that should look again now, if any: one that may take a group,
        /// or else an idle one to wait behind the running commit (until it counts as stalled)
        /// when none waits there yet.
        mutating func committerToWake(_ limits: Limits, time: any TimeSource) -> Parker? {
            if mayTakeGroup(limits, now: time.now) { return waitingCommitters.popLast() ?? idleCommitters.popLast() }
            return waitingCommitters.isEmpty && !entries.isEmpty ? idleCommitters.popLast() : nil
        }
    }

    public let limits: Limits
    private let time: any TimeSource
    private let state: Mutex<State>

    public init(limits: Limits = Limits(), time: any TimeSource = SystemTime()) {
        self.limits = limits
        self.time = time
        state = Mutex(State(lastGroupTaken: time.now))
    }

    /// Events waiting for a committer.
    public var depth: Int { state.withLock { $0.queuedEvents } }

    public var isFull: Bool { depth >= limits.capacity }

    /// Queues the batch without waiting: `complete` is called once, with the result, when the
    /// batch is durably stored or failed (on a committer's thread), or at once with a ``Refusal``.
    public func submit(_ batch: PreparedBatch, complete: @escaping @Sendable (Result<AppendResult, Error>) -> Void) {
        let now = time.now
        let outcome = state.withLock { state -> Result<Parker?, Refusal> in
            if state.closed { return .failure(.closed) }
            if state.queuedEvents > 0 && state.queuedEvents + batch.rowCount > limits.capacity { return .failure(.full) }
            state.entries.append(Entry(batch: batch, queuedAt: now, complete: complete))
            state.queuedEvents += batch.rowCount
            return .success(state.committerToWake(limits, time: time))
        }
        switch outcome {
        case .failure(let refusal): complete(.failure(refusal))
        case .success(let committer): committer?.unpark()
        }
    }

    /// The next group to commit, blocking the calling thread (a committer's own) until there is
    /// one; nil once the queue is closed and drained. The caller reports the group's end with
    /// `groupFinished()`.
    func takeGroup(parkingOn parker: Parker) -> [Entry]? {
        while true {
            enum Next { case group([Entry], alsoWake: Parker?), finished, park(until: ContinuousClock.Instant?) }
            let now = time.now
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
                    // What the group left behind (beyond its size limit) may go beside it at once.
                    return .group(group, alsoWake: state.committerToWake(limits, time: time))
                }
                if state.closed && state.entries.isEmpty { return .finished }
                if state.entries.isEmpty {
                    state.idleCommitters.append(parker)
                    return .park(until: nil)
                }
                state.waitingCommitters.append(parker)
                return .park(until: state.lastGroupTaken + limits.stalledCommitAfter)
            }
            switch next {
            case .group(let group, let other):
                other?.unpark()
                return group
            case .finished: return nil
            case .park(let deadline):
                parker.park(until: deadline, on: time)
                // After a timeout the parker is still listed; a wake-up that races with the
                // timeout leaves one spare signal, which only makes the next look come early.
                state.withLock { state in
                    state.idleCommitters.removeAll { $0 === parker }
                    state.waitingCommitters.removeAll { $0 === parker }
                }
            }
        }
    }

    /// A group taken by `takeGroup(parkingOn:)` is committed (or failed): what waited behind it
    /// may go.
    func groupFinished() {
        let next = state.withLock { state -> Parker? in
            state.committing -= 1
            return state.committerToWake(limits, time: time)
        }
        next?.unpark()
    }

    /// Refuses new batches; committers finish what is queued, then stop.
    public func close() {
        let parked = state.withLock { state -> [Parker] in
            state.closed = true
            defer {
                state.idleCommitters.removeAll()
                state.waitingCommitters.removeAll()
            }
            return state.idleCommitters + state.waitingCommitters
        }
        for committer in parked { committer.unpark() }
    }

    /// Refuses (`.timedOut`) every batch queued before `deadline` and not yet taken by a
    /// committer: while the committers are stuck, a request waits for at most about one commit
    /// timeout, not for one stuck commit after another. Returns how many were refused.
    @discardableResult
    func expire(queuedBefore deadline: ContinuousClock.Instant) -> Int {
        let expired = state.withLock { state -> [Entry] in
            let count = state.entries.prefix { $0.queuedAt < deadline }.count
            guard count > 0 else { return [] }
            let expired = Array(state.entries.prefix(count))
            state.entries.removeFirst(count)
            state.queuedEvents -= expired.reduce(0) { $0 + $1.batch.rowCount }
            return expired
        }
        for entry in expired { entry.complete(.failure(Refusal.timedOut)) }
        return expired.count
    }

    /// True once `close()` was called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Once closed, refuses everything still queued (`.closed`) instead of committing it: what
    /// committers do when the database failed them while draining, so that a shutdown does not
    /// wait for one failing commit after another.
    func refuseQueued() {
        let refused = state.withLock { state -> [Entry] in
            guard state.closed else { return [] }
            defer {
                state.entries.removeAll()
                state.queuedEvents = 0
            }
            return state.entries
        }
        for entry in refused { entry.complete(.failure(Refusal.closed)) }
    }

    /// Committers parked on an empty queue, and behind a running commit: states a test waits for.
    var parkedCommitters: (idle: Int, waiting: Int) {
        state.withLock { ($0.idleCommitters.count, $0.waitingCommitters.count) }
    }
}
