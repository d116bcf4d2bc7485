import EventStore
import Synchronization

/// Group commit: requests hand in prepared batches and wait; committers take everything waiting
/// (up to a limit) and store it in one transaction, so many small requests share one commit.
/// Each request is answered only after the transaction holding its events committed.
public final class IngestQueue: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Events waiting beyond this are refused (429) instead of queued.
        public var capacity: Int = 50_000
        /// Events per transaction.
        public var maxGroupEvents: Int = 10_000

        public init(capacity: Int = 50_000, maxGroupEvents: Int = 10_000) {
            self.capacity = capacity
            self.maxGroupEvents = maxGroupEvents
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
        var continuation: CheckedContinuation<AppendResult, Error>
    }

    private struct State {
        var entries: [Entry] = []
        var queuedEvents = 0
        var idleCommitters: [CheckedContinuation<Void, Never>] = []
        var closed = false
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
            let outcome = state.withLock { state -> Result<CheckedContinuation<Void, Never>?, Refusal> in
                if state.closed { return .failure(.closed) }
                if state.queuedEvents > 0 && state.queuedEvents + batch.rowCount > limits.capacity { return .failure(.full) }
                state.entries.append(Entry(batch: batch, continuation: continuation))
                state.queuedEvents += batch.rowCount
                return .success(state.idleCommitters.popLast())
            }
            switch outcome {
            case .failure(let refusal): continuation.resume(throwing: refusal)
            case .success(let committer): committer?.resume()
            }
        }
    }

    /// The next group to commit; nil once the queue is closed and drained.
    func takeGroup() async -> [Entry]? {
        while true {
            enum Next { case group([Entry]), finished, wait }
            let next = state.withLock { state -> Next in
                if !state.entries.isEmpty {
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
                    return .group(group)
                }
                return state.closed ? .finished : .wait
            }
            switch next {
            case .group(let group): return group
            case .finished: return nil
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
