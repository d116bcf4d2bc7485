/// One connection kept open across uses by a single thread: opened on first use, checked before
/// each use, and replaced after the server restarts or the connection breaks.
///
/// Not thread-safe: the pool keeps one per worker thread, the ingest committers one per thread.
/// Only `interrupter` may be used from other threads: an owner that brackets its work with
/// `interrupter.begin`/`end` lets another thread end that work (see `ConnectionInterrupter`).
public final class ReusableConnection {
    public let configuration: PostgresConfiguration
    public let interrupter: ConnectionInterrupter
    private var connection: Connection?

    public init(configuration: PostgresConfiguration, interrupter: ConnectionInterrupter = ConnectionInterrupter()) {
        self.configuration = configuration
        self.interrupter = interrupter
    }

    /// Runs `body` with a healthy connection outside any transaction. A connection found broken,
    /// or left inside a transaction by `body`, is closed and never used again. Once the running
    /// unit of work is interrupted, this throws `.interrupted` instead of what the broken
    /// connection reported (but an `.unconfirmedCommit` the body threw as it is: a commit that
    /// may be made), and starts nothing more.
    public func use<T>(_ body: (Connection) throws -> T) throws -> T {
        try throwIfInterrupted()
        if let existing = connection, !existing.isHealthy {
            existing.close()
            connection = nil
        }
        do {
            let active: Connection
            if let existing = connection {
                active = existing
            } else {
                active = try Connection(configuration: configuration, interrupter: interrupter)
                connection = active
                // Interrupted while connecting: the new connection is kept for the next use.
                try throwIfInterrupted()
            }
            defer { checkIn(active) }
            return try body(active)
        } catch let error as PostgresError where error.kind == .unconfirmedCommit {
            // What the body saw of its commit (made on the primary, maybe) outweighs the
            // interruption that ended it: "did not answer" would read as nothing changed.
            throw error
        } catch {
            if (error as? PostgresError)?.isReadOnlyServer == true {
                // A server that stopped taking writes without dropping its sessions (an old
                // primary fenced with default_transaction_read_only): the next use connects again,
                // which with several hosts in the URL (target_session_attrs=read-write) finds the
                // one that takes them now, instead of failing on this session until it breaks.
                close()
            }
            try throwIfInterrupted()
            throw error
        }
    }

    public func close() {
        connection?.close()
        connection = nil
    }

    private func throwIfInterrupted() throws {
        guard let reason = interrupter.reason else { return }
        throw PostgresError(kind: .interrupted, message: "the operation was interrupted: it \(reason == .cancelled ? "was cancelled" : "\(reason)")")
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
