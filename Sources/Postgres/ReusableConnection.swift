/// One connection kept open across uses by a single thread: opened on first use, checked before
/// each use, and replaced after the server restarts or the connection breaks.
///
/// Not thread-safe: the pool keeps one per worker thread, the ingest committers one per thread.
public final class ReusableConnection {
    public let configuration: PostgresConfiguration
    private var connection: Connection?

    public init(configuration: PostgresConfiguration) {
        self.configuration = configuration
    }

    /// Runs `body` with a healthy connection outside any transaction. A connection found broken,
    /// or left inside a transaction by `body`, is closed and never used again.
    public func use<T>(_ body: (Connection) throws -> T) throws -> T {
        if let existing = connection, !existing.isHealthy {
            existing.close()
            connection = nil
        }
        let active: Connection
        if let existing = connection {
            active = existing
        } else {
            active = try Connection(configuration: configuration)
            connection = active
        }
        defer { checkIn(active) }
        return try body(active)
    }

    public func close() {
        connection?.close()
        connection = nil
    }

    /// Keeps the connection only if it is healthy and outside any transaction.
    private func checkIn(_ active: Connection) {
        if active.isHealthy && !active.isIdle {
            _ = try? active.execute("ROLLBACK")
        }
        if !active.isHealthy || !active.isIdle {
            active.close()
            connection = nil
        }
    }
}
