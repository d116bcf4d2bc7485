import EventStore
import Postgres

/// One prune or restore at a time per database: a session advisory lock, taken without waiting.
enum RetentionLock {
    /// `LogRewrite.commandLockKey`: incremental looks check it to tell a rewrite under way from
    /// one whose command died (`LogRewrite.endIfAbandoned`).
    static let key: Int64 = LogRewrite.commandLockKey

    static func holding<T>(on connection: Connection, _ body: () throws -> T) throws -> T {
        guard try connection.query("SELECT pg_try_advisory_lock(\(key))")[0].decode(0, as: Bool.self) else {
            throw LogRetentionError.busy
        }
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(\(key))") }
        return try body()
    }
}
