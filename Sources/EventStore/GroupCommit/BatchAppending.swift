import Synchronization

/// Where a batch goes to become durable: `complete` is called once, with the append's result when
/// the batch is stored (or failed), or at once with a refusal. The group-commit queue is the
/// production one; route tests pass one that keeps events in memory.
public protocol BatchAppending: Sendable {
    func submit(_ batch: PreparedBatch, complete: @escaping @Sendable (Result<AppendResult, Error>) -> Void)
    /// True while a batch submitted now would be refused for want of room: a request can be
    /// refused from its headers, before its body is read.
    var isFull: Bool { get }
}

extension BatchAppending {
    /// Waits until the batch is durably stored (or refused, or failed), or until the task is
    /// cancelled: then it throws `CancellationError` at once, and a batch already queued is still
    /// committed or not without this wait (a batch not queued yet is not queued). The HTTP server
    /// cancels its handlers only once its shutdown grace is over, having answered them 503; a
    /// wait that outlived that (a commit waiting for a lost standby, up to `--commit-timeout`)
    /// held the server, and the committers it stops next, past the process's shutdown bound.
    public func submit(_ batch: PreparedBatch) async throws -> AppendResult {
        let outcome = SubmittedBatchOutcome()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard outcome.wait(continuation) else { return }
                submit(batch) { outcome.finish($0) }
            }
        } onCancel: {
            outcome.finish(.failure(CancellationError()))
        }
    }
}

/// The one answer a waiting `submit` gets: the first of the batch's outcome and the task's
/// cancellation.
private final class SubmittedBatchOutcome: Sendable {
    private enum State {
        case notWaiting
        case waiting(CheckedContinuation<AppendResult, Error>)
        case finished(Result<AppendResult, Error>?)
    }

    private let state = Mutex(State.notWaiting)

    /// Keeps the continuation to resume, or resumes it at once if cancelled already; false then.
    func wait(_ continuation: CheckedContinuation<AppendResult, Error>) -> Bool {
        let early = state.withLock { state -> Result<AppendResult, Error>? in
            if case .finished(let result) = state { return result ?? .failure(CancellationError()) }
            state = .waiting(continuation)
            return nil
        }
        guard let early else { return true }
        continuation.resume(with: early)
        return false
    }

    func finish(_ result: Result<AppendResult, Error>) {
        let waiting = state.withLock { state -> CheckedContinuation<AppendResult, Error>? in
            switch state {
            case .notWaiting:
                state = .finished(result)
                return nil
            case .waiting(let continuation):
                state = .finished(nil)
                return continuation
            case .finished:
                return nil
            }
        }
        waiting?.resume(with: result)
    }
}
