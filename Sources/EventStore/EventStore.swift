import EngageCore
import Postgres

/// The append-only event log in PostgreSQL.
///
/// `append` is all-or-nothing and durable when it returns (synchronous_commit stays on). Event ids
/// are the idempotency key: an id already in the log is reported as a duplicate and not stored
/// again, even when two appends with the same ids race. `read(after:limit:)` never skips an event:
/// see `LogPosition`.
public struct EventStore: Sendable {
    public let pool: ConnectionPool

    public init(pool: ConnectionPool) {
        self.pool = pool
    }

    // MARK: Append

    /// Appends a batch in one transaction: one statement claims the new ids, one binary COPY
    /// stores their events. Retries once, on a fresh connection, when the connection breaks:
    /// the ids make that safe (events committed before the break come back as duplicates).
    public func append(_ items: [AppendItem]) async throws -> AppendResult {
        if items.isEmpty { return AppendResult(outcomes: []) }
        do {
            return try await pool.withConnection { connection in try Self.append(items, on: connection) }
        } catch let error as PostgresError where error.isConnectionProblem || error.sqlState == "40P01" {
            return try await pool.withConnection { connection in try Self.append(items, on: connection) }
        }
    }

    /// The same, on a connection the caller holds (outside any open transaction).
    public static func append(_ items: [AppendItem], on connection: Connection) throws -> AppendResult {
        try connection.transaction { connection in try appendInOpenTransaction(items, on: connection) }
    }

    /// The append's statements inside a transaction the caller opened and will commit: group
    /// commit shares one transaction among several requests' batches.
    public static func appendInOpenTransaction(_ items: [AppendItem], on connection: Connection) throws -> AppendResult {
        // The first occurrence of an id in the batch wins; later ones are duplicates.
        var firstIndex: [EventID: Int] = [:]
        firstIndex.reserveCapacity(items.count)
        var outcomes = [AppendResult.Outcome](repeating: .duplicate, count: items.count)
        for (index, item) in items.enumerated() where firstIndex[item.event.eventID] == nil {
            firstIndex[item.event.eventID] = index
        }
        // Claiming ids in one global order keeps two racing appends from deadlocking.
        let candidateIDs = firstIndex.keys.sorted()
        do {
            let claimed = try connection.query("""
                INSERT INTO event_ids (event_id)
                SELECT unnest(\(candidateIDs.map(\.uuid))::uuid[])
                ON CONFLICT (event_id) DO NOTHING
                RETURNING event_id
                """)
            var copy = BinaryCopyEncoder(reservingCapacity: items.count * 420)
            var fresh: [Int] = []
            fresh.reserveCapacity(claimed.rowCount)
            for row in claimed.rows {
                guard let id = EventID(bytes: try row.cell(0).uuidBytes()), let index = firstIndex[id] else {
                    throw PostgresError(kind: .protocolViolation, message: "the server returned an event id that was not sent")
                }
                fresh.append(index)
            }
            // Keep the batch's own order in the log.
            fresh.sort()
            for index in fresh {
                outcomes[index] = .stored
                Self.encode(items[index], into: &copy)
            }
            if !fresh.isEmpty {
                try connection.copyIn(Self.copyStatement, data: copy.finish())
            }
            return AppendResult(outcomes: outcomes)
        }
    }

    static let copyStatement: SQL = """
        COPY events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                     experiment_id, experiment_arm, payload)
        FROM STDIN (FORMAT binary)
        """

    static func encode(_ item: AppendItem, into copy: inout BinaryCopyEncoder) {
        let event = item.event
        copy.beginRow(columnCount: 10)
        copy.appendUUID(event.eventID.bytes)
        copy.appendText(item.appID)
        copy.appendText(event.notificationID)
        copy.appendText(event.type.rawValue)
        copy.appendText(event.category)
        copy.appendText(event.deviceID)
        copy.appendTimestamp(unixMicroseconds: event.occurredAt.microsecondsSinceEpoch)
        if let experiment = event.experiment {
            copy.appendText(experiment.id)
            copy.appendText(experiment.arm)
        } else {
            copy.appendNull()
            copy.appendNull()
        }
        copy.appendJSONB(event.payloadJSON)
    }

    // MARK: Read

    static let columns = """
        position, transaction_id, event_id, app_id, notification_id, type, category, device_id,
        occurred_at, recorded_at, experiment_id, experiment_arm, payload
        """

    /// Up to `limit` events after `position`, in log order. Only events of transactions older than
    /// every transaction still running are returned, so nothing can later appear before them.
    public func read(after position: LogPosition, limit: Int) async throws -> [StoredEvent] {
        try await pool.withConnection { connection in try Self.read(after: position, limit: limit, on: connection) }
    }

    public static func read(after position: LogPosition, limit: Int, on connection: Connection) throws -> [StoredEvent] {
        let rows = try connection.query("""
            SELECT \(unsafeSQL: columns)
            FROM events
            WHERE (transaction_id, position) > (\(String(position.transactionID))::xid8, \(position.sequence))
              AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY transaction_id, position
            LIMIT \(limit)
            """)
        return try rows.rows.map(decode)
    }

    /// Every event of one notification (one stream), in log order.
    public func read(app appID: String, notification notificationID: String) async throws -> [StoredEvent] {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                SELECT \(unsafeSQL: Self.columns)
                FROM events
                WHERE app_id = \(appID) AND notification_id = \(notificationID)
                ORDER BY transaction_id, position
                """)
            return try rows.rows.map(Self.decode)
        }
    }

    /// The position of the last event a reader can see now (`.start` for an empty log).
    public func headPosition() async throws -> LogPosition {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                SELECT transaction_id, position FROM events
                WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                ORDER BY transaction_id DESC, position DESC LIMIT 1
                """)
            guard let row = rows.rows.first else { return .start }
            return LogPosition(transactionID: try row.decode(0), sequence: try row.decode(1))
        }
    }

    static func decode(_ row: PostgresRow) throws -> StoredEvent {
        guard let eventID = EventID(bytes: try row.cell(2).uuidBytes()) else {
            throw PostgresError(kind: .decoding, message: "bad event id")
        }
        return StoredEvent(
            position: LogPosition(transactionID: try row.decode(1), sequence: try row.decode(0)),
            eventID: eventID,
            appID: try row.decode(3),
            notificationID: try row.decode(4),
            type: try row.decode(5),
            category: try row.decode(6),
            deviceID: try row.decode(7),
            occurredAt: Timestamp(microsecondsSinceEpoch: try row.cell(8).unixMicroseconds()),
            recordedAt: Timestamp(microsecondsSinceEpoch: try row.cell(9).unixMicroseconds()),
            experimentID: try row.decode(10),
            experimentArm: try row.decode(11),
            payload: try row.cell(12).utf8Bytes())
    }

    // MARK: Maintenance

    /// Creates the monthly partitions around now; run at start-up and daily.
    @discardableResult
    public func ensurePartitions(monthsAhead: Int = 3) async throws -> Int {
        try await pool.withConnection { connection in
            try connection.query("SELECT engage_ensure_event_partitions(1, \(monthsAhead))")[0].decode(0, as: Int.self)
        }
    }
}
