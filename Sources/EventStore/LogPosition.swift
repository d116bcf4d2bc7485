/// Where an event sits in the log's read order: the appending transaction's id, then the row's
/// sequence number. Readers only read below the oldest transaction still in flight, so this order
/// never changes behind a reader: a transaction that commits late cannot land before a position
/// already read.
public struct LogPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var transactionID: UInt64
    public var sequence: Int64

    public init(transactionID: UInt64, sequence: Int64) {
        self.transactionID = transactionID
        self.sequence = sequence
    }

    /// Before the first event.
    public static let start = LogPosition(transactionID: 0, sequence: 0)

    public static func < (lhs: LogPosition, rhs: LogPosition) -> Bool {
        (lhs.transactionID, lhs.sequence) < (rhs.transactionID, rhs.sequence)
    }

    public var description: String { "\(transactionID)/\(sequence)" }

    /// Parses the `transaction/sequence` form of `description`.
    public init?(_ text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let transaction = UInt64(parts[0]), let sequence = Int64(parts[1]) else { return nil }
        self.init(transactionID: transaction, sequence: sequence)
    }
}
