import EngageCore
import EventStore
import Synchronization

/// Where route tests' accepted events go instead of the group-commit queue: event ids in memory,
/// each stored once (an id seen before is a duplicate, as in the log). It can be made to refuse or
/// fail every batch, as a full or closing queue, or a failed commit, does.
public final class InMemoryEventLog: BatchAppending {
    private struct State {
        var stored: [EventID] = []
        var seen: Set<EventID> = []
        var failure: (any Error)?
    }

    private let state = Mutex(State())

    public init() {}

    /// Every event id stored, in the order stored.
    public var storedIDs: [EventID] { state.withLock { $0.stored } }

    /// While set, every batch fails with `failure` and nothing is stored (nil: store again).
    public func setFailure(_ failure: (any Error)?) {
        state.withLock { $0.failure = failure }
    }

    /// Full while it is made to fail every batch as a full queue does.
    public var isFull: Bool {
        state.withLock { state in
            guard case .full? = state.failure as? IngestQueue.Refusal else { return false }
            return true
        }
    }

    public func submit(_ batch: PreparedBatch, complete: @escaping @Sendable (Result<AppendResult, Error>) -> Void) {
        let result = state.withLock { state -> Result<AppendResult, Error> in
            if let failure = state.failure { return .failure(failure) }
            return .success(AppendResult(outcomes: batch.itemEventIDs.map { id in
                guard let id, state.seen.insert(id).inserted else { return .duplicate }
                state.stored.append(id)
                return .stored
            }))
        }
        complete(result)
    }
}
