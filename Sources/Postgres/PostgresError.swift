/// An error from the Postgres module. `description` is safe to log or show; it never contains
/// parameter values. Server errors keep their SQLSTATE, detail and hint.
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
    }

    public var kind: Kind
    public var sqlState: String?
    public var message: String
    public var detail: String?
    public var hint: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
    }

    /// SQLSTATE 23505.
    public var isUniqueViolation: Bool { sqlState == "23505" }
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
        text += ": \(message)"
        return text
    }

    public var debugDescription: String {
        var text = description
        if let detail { text += " detail: \(detail)" }
        if let hint { text += " hint: \(hint)" }
        return text
    }
}
