/// A transaction isolation level, written as a literal in source code (`"REPEATABLE READ"`): it
/// becomes statement text, so, like `SQL`, it cannot come from a runtime string.
public struct TransactionIsolation: Sendable, Equatable, ExpressibleByStringLiteral {
    let text: String

    public init(stringLiteral value: StaticString) {
        text = value.description
    }

    public static let readCommitted: TransactionIsolation = "READ COMMITTED"
    public static let repeatableRead: TransactionIsolation = "REPEATABLE READ"
    public static let serializable: TransactionIsolation = "SERIALIZABLE"
}
