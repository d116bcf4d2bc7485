import EngageCore
import Postgres

extension Timestamp {
    /// The same instant as a bound `timestamptz`.
    var postgres: PostgresTimestamp { PostgresTimestamp(unixMicroseconds: microsecondsSinceEpoch) }

    init(_ value: PostgresTimestamp) { self.init(microsecondsSinceEpoch: value.unixMicroseconds) }
}

extension PostgresRow {
    func timestamp(_ column: Int) throws -> Timestamp {
        Timestamp(try decode(column, as: PostgresTimestamp.self))
    }

    func optionalTimestamp(_ column: Int) throws -> Timestamp? {
        try decode(column, as: PostgresTimestamp?.self).map(Timestamp.init)
    }
}
