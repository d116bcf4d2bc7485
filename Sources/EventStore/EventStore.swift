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

    /// Appends a batch in one transaction and returns each item's outcome.
    public func append(_ items: [AppendItem]) async throws -> AppendResult {
        try await append([PreparedBatch(items)])[0]
    }

    /// Appends several prepared batches in ONE transaction (group commit): all are stored or none.
    /// Retries once, on a fresh connection, when the connection breaks or a deadlock is detected:
    /// the ids make that safe (events committed before the break come back as duplicates).
    public func append(_ batches: [PreparedBatch]) async throws -> [AppendResult] {
        if batches.allSatisfy({ $0.itemCount == 0 }) { return batches.map { _ in AppendResult(outcomes: []) } }
        do {
            return try await pool.withConnection { connection in try Self.append(batches, on: connection) }
        } catch let error as PostgresError where error.isConnectionProblem || error.sqlState == "40P01" {
            return try await pool.withConnection { connection in try Self.append(batches, on: connection) }
        }
    }

    /// The same, on a connection the caller holds (outside any open transaction).
    public static func append(_ items: [AppendItem], on connection: Connection) throws -> AppendResult {
        try append([PreparedBatch(items)], on: connection)[0]
    }

    public static func append(_ batches: [PreparedBatch], on connection: Connection) throws -> [AppendResult] {
        // Fast path: nothing is a duplicate. The ids are copied into event_ids in sorted order (so
        // two racing appends cannot deadlock), then the events. A known id makes the first COPY
        // fail on the unique index; the transaction is rolled back and the careful path runs.
        var allIDs: [EventID] = []
        allIDs.reserveCapacity(batches.reduce(0) { $0 + $1.rowCount })
        for batch in batches { allIDs += batch.ids }
        allIDs.sort()
        let unique = zip(allIDs, allIDs.dropFirst()).allSatisfy { $0 != $1 }
        if unique {
            do {
                return try connection.transaction { connection in
                    try claimAll(allIDs, on: connection)
                    try copyRows(of: batches, keeping: nil, on: connection)
                    return batches.map { batch in
                        AppendResult(outcomes: batch.rowOfItem.map { $0 == nil ? .duplicate : .stored })
                    }
                }
            } catch let error as PostgresError where error.isUniqueViolation {
                // Fall through to the careful path.
            }
        }
        return try connection.transaction { connection in try appendCarefully(batches, on: connection) }
    }

    /// Inside a transaction the caller opened and commits.
    public static func appendInOpenTransaction(_ items: [AppendItem], on connection: Connection) throws -> AppendResult {
        try appendCarefully([PreparedBatch(items)], on: connection)[0]
    }

    /// Claims ids one by one with ON CONFLICT DO NOTHING; only claimed rows are stored. Within
    /// the group, the first batch (and first item) carrying an id wins.
    private static func appendCarefully(_ batches: [PreparedBatch], on connection: Connection) throws -> [AppendResult] {
        var candidates = Set<EventID>()
        for batch in batches { candidates.formUnion(batch.ids) }
        let claimedRows = try connection.query("""
            INSERT INTO event_ids (event_id)
            SELECT unnest(\(candidates.sorted().map(\.uuid))::uuid[])
            ON CONFLICT (event_id) DO NOTHING
            RETURNING event_id
            """)
        var unclaimed = Set<EventID>()
        for row in claimedRows.rows {
            guard let id = EventID(bytes: try row.cell(0).uuidBytes()) else {
                throw PostgresError(kind: .protocolViolation, message: "the server returned a malformed event id")
            }
            unclaimed.insert(id)
        }
        var keep: [[Bool]] = []
        var results: [AppendResult] = []
        for batch in batches {
            var keepRows = [Bool](repeating: false, count: batch.rowCount)
            for (row, id) in batch.ids.enumerated() where unclaimed.remove(id) != nil {
                keepRows[row] = true
            }
            keep.append(keepRows)
            results.append(AppendResult(outcomes: batch.rowOfItem.map { row in
                guard let row, keepRows[row] else { return .duplicate }
                return .stored
            }))
        }
        try copyRows(of: batches, keeping: keep, on: connection)
        return results
    }

    private static func claimAll(_ sortedIDs: [EventID], on connection: Connection) throws {
        var copy = BinaryCopyEncoder(reservingCapacity: sortedIDs.count * 22 + 32)
        for id in sortedIDs {
            copy.beginRow(columnCount: 1)
            copy.appendUUID(id.bytes)
        }
        try connection.copyIn("COPY event_ids (event_id) FROM STDIN (FORMAT binary)", data: copy.finish())
    }

    /// Streams the batches' rows (all, or those marked in `keeping`) in one COPY.
    private static func copyRows(of batches: [PreparedBatch], keeping: [[Bool]]?, on connection: Connection) throws {
        let anyRow = keeping.map { $0.contains { $0.contains(true) } } ?? batches.contains { $0.rowCount > 0 }
        guard anyRow else { return }
        try connection.copyIn(copyStatement) { send in
            try send(BinaryCopyEncoder.header)
            for (index, batch) in batches.enumerated() {
                if let keep = keeping?[index] {
                    var selected: [UInt8] = []
                    for (row, range) in batch.rowRanges.enumerated() where keep[row] { selected += batch.rows[range] }
                    if !selected.isEmpty { try send(selected) }
                } else if !batch.rows.isEmpty {
                    try send(batch.rows)
                }
            }
            try send(BinaryCopyEncoder.trailer)
        }
    }

    static let copyStatement: SQL = """
        COPY events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                     experiment_id, experiment_arm, payload)
        FROM STDIN (FORMAT binary)
        """

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
