/// An error from the Postgres module. `description` is safe to log or show: for a server error
/// it is the SQLSTATE and its class's name, never the server's message, detail or hint, which can
/// quote a value ("invalid input syntax for type integer: ..."); those are kept in the fields
/// and in `debugDescription`. Other kinds carry messages this module writes without values.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// Could not connect, or the connection broke: the operation may be retried on a new connection.
        case connection
        /// The server rejected a statement; `sqlState` says why.
        case server
        /// The client library or the protocol misbehaved (unexpected result status, bad binary data).
        case protocolViolation
        /// A value could not be decoded into the requested Swift type.
        case decoding
        /// A value could not be sent (for example a string holding NUL).
        case encoding
        /// The pool is closed.
        case poolClosed
        /// The caller used the connection in a state the operation does not allow.
        case misuse
        /// Another thread ended the operation (a timeout, or the waiting task's cancellation) by
        /// closing its connection: whether the server finished it is unknown.
        case interrupted
        /// The server warned while committing (such as a cancelled wait for synchronous
        /// replication): the transaction may have committed on the primary alone, so it is not
        /// known to be as durable as configured.
        case unconfirmedCommit
    }

    public var kind: Kind
    public var sqlState: String?
    public var message: String
    public var detail: String?
    public var hint: String?
    /// The constraint a server error names (a CHECK, unique or foreign key violation), if any.
    public var constraintName: String?
    /// The table a server error names, if any.
    public var tableName: String?
    /// No connection was made, so nothing was sent: what the caller asked for was not done. (A
    /// `.connection` error of a connection that broke later leaves that unknown.)
    public var failedToConnect = false

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
    }

    /// A connection that could not be made.
    static func cannotConnect(_ message: String) -> PostgresError {
        var error = PostgresError(kind: .connection, message: message)
        error.failedToConnect = true
        return error
    }

    /// SQLSTATE 23505.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// SQLSTATE 25006, read_only_sql_transaction: a write on a server (or in a session) that
    /// takes none.
    public var isReadOnlyServer: Bool { sqlState == "25006" }

    /// Worth retrying on a fresh connection: the connection was lost or the server is starting or stopping.
    public var isConnectionProblem: Bool {
        if kind == .connection { return true }
        guard let sqlState else { return false }
        // 08xxx connection exceptions, 57P01..57P03 admin shutdown / crash shutdown / cannot connect now.
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    public var description: String {
        var text = "postgres \(kind.rawValue) error"
        if let sqlState { text += " \(sqlState)" }
        if kind == .server {
            text += ": " + (sqlState.flatMap { Self.classNames[String($0.prefix(2))] } ?? "the server refused the statement")
        } else {
            text += ": \(message)"
        }
        return text
    }

    /// Everything, the server's message, detail and hint included: not for logs.
    public var debugDescription: String {
        var text = "postgres \(kind.rawValue) error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let detail { text += " detail: \(detail)" }
        if let hint { text += " hint: \(hint)" }
        return text
    }

    /// The SQLSTATE classes (the first two characters) of PostgreSQL's Appendix A.
    static let classNames: [String: String] = [
        "01": "warning", "02": "no data", "03": "SQL statement not yet complete", "08": "connection exception",
        "09": "triggered action exception", "0A": "feature not supported", "0B": "invalid transaction initiation",
        "0F": "locator exception", "0L": "invalid grantor", "0P": "invalid role specification", "0Z": "diagnostics exception",
        "20": "case not found", "21": "cardinality violation", "22": "data exception", "23": "integrity constraint violation",
        "24": "invalid cursor state", "25": "invalid transaction state", "26": "invalid SQL statement name",
        "27": "triggered data change violation", "28": "invalid authorization specification",
        "2B": "dependent privilege descriptors still exist", "2D": "invalid transaction termination", "2F": "SQL routine exception",
        "34": "invalid cursor name", "38": "external routine exception", "39": "external routine invocation exception",
        "3B": "savepoint exception", "3D": "invalid catalog name", "3F": "invalid schema name", "40": "transaction rollback",
        "42": "syntax error or access rule violation", "44": "WITH CHECK OPTION violation", "53": "insufficient resources",
        "54": "program limit exceeded", "55": "object not in prerequisite state", "57": "operator intervention",
        "58": "system error", "72": "snapshot failure", "F0": "configuration file error", "HV": "foreign data wrapper error",
        "P0": "PL/pgSQL error", "XX": "internal error",
    ]
}
