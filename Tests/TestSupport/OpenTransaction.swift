import Postgres

/// A session of its own, in a transaction that stays open after `statement` (holding the locks it
/// took) until the test commits it: a long report query or a long ALTER, as another client would hold it.
public struct OpenTransaction {
    public let connection: Connection
    public let pid: Int

    public init(_ database: PostgresConfiguration, holding statement: SQL) throws {
        connection = try Connection(configuration: database)
        pid = try connection.query("SELECT pg_backend_pid()")[0].decode(0, as: Int.self)
        try connection.execute("BEGIN")
        _ = try connection.query(statement)
    }

    public func commit() throws { try connection.execute("COMMIT") }
}
