/// Runs `operation` for at most `limit`: its value, or nil once the limit has passed. The
/// operation is then cancelled and awaited, so it must end promptly when cancelled, as a pooled
/// database call does (the pool interrupts its connection: see `ConnectionPool.withConnection`),
/// except while a new connection is being made, which only its connect timeout ends. Errors of
/// the operation are thrown as they come.
public func withTimeLimit<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T? {
    try await withThrowingTaskGroup(of: Outcome<T>.self) { group in
        group.addTask { .finished(try await operation()) }
        group.addTask {
            try await Task.sleep(for: limit)
            return .timedOut
        }
        defer { group.cancelAll() }
        guard case .finished(let value) = try await group.next()! else { return nil }
        return value
    }
}

private enum Outcome<T: Sendable>: Sendable {
    case finished(T)
    case timedOut
}
