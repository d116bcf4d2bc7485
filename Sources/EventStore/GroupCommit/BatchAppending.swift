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
    /// Waits until the batch is durably stored (or refused, or failed).
    public func submit(_ batch: PreparedBatch) async throws -> AppendResult {
        try await withCheckedThrowingContinuation { continuation in
            submit(batch) { continuation.resume(with: $0) }
        }
    }
}
