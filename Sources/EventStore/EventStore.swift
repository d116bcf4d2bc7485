import EngageCore
import Postgres

/// The append-only event log in PostgreSQL.
///
/// `append` is all-or-nothing and durable when it returns (synchronous_commit stays on, and a
/// commit the configured synchronous standbys do not have is a failure: `StandbyConfirmation`). Event ids
/// are the idempotency key: an id already in the log is reported as a duplicate and not stored
/// again, even when two appends with the same ids race. The log is partitioned by the week events
/// were recorded in, so the key lives in `event_ids`, which every append writes in the same
/// transaction as the events (migration 010). `read(after:limit:)` never skips an event: see
/// `LogPosition`.
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
    /// Retries on a fresh connection when the connection breaks (once) or PostgreSQL picks this
    /// append as a deadlock victim (up to three times).
    public func append(_ batches: [PreparedBatch]) async throws -> [AppendResult] {
        if batches.allSatisfy({ $0.itemCount == 0 }) { return batches.map { _ in AppendResult(outcomes: []) } }
        var retries = AppendRetries()
        while true {
            do {
                return try await pool.withConnection { connection in try Self.append(batches, on: connection) }
            } catch where retries.allowAnother(after: error) {}
        }
    }

    /// The same on a connection of the caller's own thread (the ingest committers keep one each),
    /// retried the same way.
    public static func append(_ batches: [PreparedBatch], using connection: ReusableConnection) throws -> [AppendResult] {
        if batches.allSatisfy({ $0.itemCount == 0 }) { return batches.map { _ in AppendResult(outcomes: []) } }
        var retries = AppendRetries()
        while true {
            do {
                return try connection.use { connection in try append(batches, on: connection) }
            } catch where retries.allowAnother(after: error) {}
        }
    }

    /// Which failed appends run again. The ids make a retry safe: events committed before the
    /// failure come back as duplicates.
    private struct AppendRetries {
        var deadlocks = 0
        var connectionBroke = false

        mutating func allowAnother(after error: any Error) -> Bool {
            guard let error = error as? PostgresError else { return false }
            if error.sqlState == "40P01" && deadlocks < 3 {
                deadlocks += 1
                return true
            }
            if error.isConnectionProblem && !connectionBroke {
                connectionBroke = true
                return true
            }
            return false
        }
    }

    /// The same, on a connection the caller holds (outside any open transaction).
    public static func append(_ items: [AppendItem], on connection: Connection) throws -> AppendResult {
        try append([PreparedBatch(items)], on: connection)[0]
    }

    public static func append(_ batches: [PreparedBatch], on connection: Connection) throws -> [AppendResult] {
        // A failed COPY inside the caller's transaction would abort it: refuse rather than confuse.
        guard connection.isIdle else {
            throw PostgresError(kind: .misuse, message: "append(_:on:) needs a connection outside any transaction; use appendInOpenTransaction")
        }
        do {
            return try appendOnce(batches, on: connection)
        } catch let error as PostgresError where error.isMissingPartition {
            // Nothing made this week's partition yet (engage serve makes them a week ahead every hour).
            try EventPartitions.ensure(on: connection)
            return try appendOnce(batches, on: connection)
        }
    }

    /// Fast path: no id repeats within the group, so the ids go in one COPY and the rows in
    /// another, in one transaction whose COMMIT travels with the second COPY. An id already in the
    /// log makes the first COPY fail on `event_ids`' primary key, before any event is written; the
    /// careful path then runs. A COPY racing another with the same ids waits for it, then fails
    /// the same way. Leaves the connection outside any transaction, whatever happens.
    private static func appendOnce(_ batches: [PreparedBatch], on connection: Connection) throws -> [AppendResult] {
        let rows = rowsInIDOrder(of: batches, keeping: nil)
        if !zip(rows, rows.dropFirst()).contains(where: { $0.id == $1.id }) {
            do {
                // A warning during the commit, which travels with the second COPY (a cancelled wait
                // for a synchronous standby, or a session ended while it waited), means stored on the
                // primary alone: a failure, retried by the client. So does a commit the synchronous
                // standbys do not have.
                let verdict = try StandbyConfirmation.committing(on: connection) { try copyIDsAndRows(rows, of: batches, on: $0) }
                try StandbyConfirmation.acknowledge(verdict, on: connection)
                // Every row is stored; an item repeating an id in its batch repeats a row stored now.
                return batches.map { batch in batch.outcomes(storedRow: { _ in true }, holder: { batch.appIDs[$0] }) }
            } catch let error as PostgresError where error.isUniqueViolation {
                // Fall through to the careful path.
            }
        }
        // A failure after the COMMIT (the session lost while the standbys are awaited) is left to
        // `AppendRetries`: a resend finds the events stored and reports them as duplicates once
        // they are durable.
        let (results, verdict) = try StandbyConfirmation.checkedTransaction(on: connection, unanswered: .leftToTheResend) {
            try appendCarefully(batches, on: $0)
        }
        try StandbyConfirmation.acknowledge(verdict, on: connection)
        return results
    }

    /// `BEGIN` and the ids' COPY in one round trip, then the events' COPY, `COMMIT` and the
    /// standbys' check (`StandbyConfirmation`) in another; returns the check's verdict.
    private static func copyIDsAndRows(_ rows: [RowRef], of batches: [PreparedBatch], on connection: Connection) throws
        -> StandbyConfirmation.Verdict {
        guard !rows.isEmpty else { return .notRequired }
        do {
            var ids = BinaryCopyEncoder(reservingCapacity: BinaryCopyEncoder.header.count + rows.count * 48 + 2)
            for row in rows {
                ids.beginRow(columnCount: 2)
                ids.appendUUID(row.id.bytes)
                ids.appendText(batches[row.batch].appIDs[row.row])
            }
            try connection.copyIn(beginAndCopyIDsStatement, data: ids.finish())
            return try StandbyConfirmation.verdict(from: copy(rows, of: batches, into: copyAndCommit(on: connection), on: connection))
        } catch {
            if !connection.isIdle && connection.isHealthy { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Inside a transaction the caller opened and commits.
    public static func appendInOpenTransaction(_ items: [AppendItem], on connection: Connection) throws -> AppendResult {
        // Outside a transaction the staging table would be dropped as soon as it was made.
        guard !connection.isIdle else {
            throw PostgresError(kind: .misuse, message: "appendInOpenTransaction(_:on:) needs an open transaction; use append(_:on:)")
        }
        return try appendCarefully([PreparedBatch(items)], on: connection)[0]
    }

    /// Stages the rows (the first of the group carrying each id) in a transaction's table, then
    /// moves into the log those whose id it does not hold yet, in staging order. Within the
    /// group, the first batch (and first item) carrying an id wins. An item not stored is a
    /// duplicate when the id's holder is of its app, else `idOfAnotherApp`.
    private static func appendCarefully(_ batches: [PreparedBatch], on connection: Connection) throws -> [AppendResult] {
        var seen = Set<EventID>()
        var firstApp: [EventID: String] = [:]
        let firstOfID = batches.map { batch in
            batch.ids.indices.map { row in
                guard seen.insert(batch.ids[row]).inserted else { return false }
                firstApp[batch.ids[row]] = batch.appIDs[row]
                return true
            }
        }
        try connection.execute(createStaging)
        // Empty already unless an earlier append ran in the same open transaction.
        try connection.execute("DELETE FROM engage_append_staging_v1")
        try copy(rowsInIDOrder(of: batches, keeping: firstOfID), of: batches, into: stagingCopyStatement, on: connection)
        let storedRows = try connection.query("""
            WITH new_ids AS (
                INSERT INTO event_ids (event_id, app_id)
                SELECT event_id, app_id FROM engage_append_staging_v1 ORDER BY ordinal
                ON CONFLICT (event_id) DO NOTHING
                RETURNING event_id
            )
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                experiment_id, experiment_arm, payload)
            SELECT s.event_id, s.app_id, s.notification_id, s.type, s.category, s.device_id, s.occurred_at,
                   s.experiment_id, s.experiment_arm, s.payload
            FROM engage_append_staging_v1 s JOIN new_ids USING (event_id)
            ORDER BY s.ordinal
            RETURNING event_id
            """)
        var stored = Set<EventID>()
        for row in storedRows.rows {
            guard let id = EventID(bytes: try row.cell(0).uuidBytes()) else {
                throw PostgresError(kind: .protocolViolation, message: "the server returned a malformed event id")
            }
            stored.insert(id)
        }
        var foundHolders: [EventID: String] = [:]
        if stored.count < seen.count {
            try waitForDurabilityOfFoundEvents(on: connection)
            foundHolders = try appsHoldingFoundIDs(on: connection)
        }
        return zip(batches, firstOfID).map { batch, first in
            batch.outcomes(storedRow: { first[$0] && stored.contains(batch.ids[$0]) }, holder: { row in
                let id = batch.ids[row]
                return stored.contains(id) ? firstApp[id] : foundHolders[id]
            })
        }
    }

    /// The app holding each staged id, where known (NULL, an id stored before migration 018 or by
    /// an older engage, is left out: it counts as any item's own app). Looked up by the primary
    /// key, and only when some id was found already stored (a retry).
    private static func appsHoldingFoundIDs(on connection: Connection) throws -> [EventID: String] {
        let rows = try connection.query("""
            SELECT e.event_id, e.app_id FROM engage_append_staging_v1 s JOIN event_ids e USING (event_id)
            WHERE e.app_id IS NOT NULL
            """)
        var holders: [EventID: String] = [:]
        for row in rows.rows {
            guard let id = EventID(bytes: try row.cell(0).uuidBytes()) else {
                throw PostgresError(kind: .protocolViolation, message: "the server returned a malformed event id")
            }
            holders[id] = try row.decode(1)
        }
        return holders
    }

    /// Makes this transaction's commit wait for what it found already in the log to be as
    /// durable as configured. A retry reports events found in the log as stored, yet their first
    /// attempt may have committed on the primary alone (its wait for the synchronous standby
    /// cancelled, its client told 503) and the retry itself writes nothing, and PostgreSQL makes
    /// only a transaction that wrote WAL wait for the standby. A transactional logical message is
    /// the smallest WAL write there is (no table, no privilege needed); the commit then waits
    /// until the standby holds the WAL up to it, which includes the earlier commit.
    private static func waitForDurabilityOfFoundEvents(on connection: Connection) throws {
        try connection.execute("SELECT pg_logical_emit_message(true, 'engage', 'duplicates found')")
    }

    /// Created in the transaction that uses it and dropped when it commits (the database role
    /// needs the TEMPORARY privilege, which PUBLIC has unless revoked). No session may end holding
    /// a temporary table: PostgreSQL drops what is left in a transaction of its own as the session
    /// ends, that commit waits for the synchronous standby like any other, and once the standby
    /// has been promoted (a switchover) the old primary's backend never exits, so its shutdown
    /// never finishes. The version in the name keeps two engage versions sharing a session
    /// (through a pooler) from reusing a layout.
    static let createStaging: SQL = """
        CREATE TEMPORARY TABLE IF NOT EXISTS engage_append_staging_v1 (
            ordinal bigint GENERATED ALWAYS AS IDENTITY,
            event_id uuid, app_id text, notification_id text, type text, category text, device_id text,
            occurred_at timestamptz, experiment_id text, experiment_arm text, payload jsonb
        ) ON COMMIT DROP
        """

    private typealias RowRef = (id: EventID, batch: Int, row: Int)

    /// The batches' rows (all, or those marked in `keeping`) in event-id order: every append then
    /// takes its ids' places in the primary key in the same order, so two appends sharing ids
    /// wait for each other but cannot deadlock.
    private static func rowsInIDOrder(of batches: [PreparedBatch], keeping: [[Bool]]?) -> [RowRef] {
        var rows: [RowRef] = []
        for (index, batch) in batches.enumerated() {
            for (row, id) in batch.ids.enumerated() where keeping?[index][row] ?? true {
                rows.append((id, index, row))
            }
        }
        return rows.sorted { $0.id < $1.id }
    }

    /// Sends the rows in one COPY, in the order given; returns the rows of the statement's last
    /// query, if it has one after the COPY.
    @discardableResult
    private static func copy(_ rows: [RowRef], of batches: [PreparedBatch], into statement: SQL, on connection: Connection) throws
        -> QueryResult? {
        guard !rows.isEmpty else { return nil }
        let bytes = rows.reduce(0) { $0 + batches[$1.batch].rowRanges[$1.row].count }
        var data: [UInt8] = []
        data.reserveCapacity(BinaryCopyEncoder.header.count + bytes + BinaryCopyEncoder.trailer.count)
        data += BinaryCopyEncoder.header
        for row in rows { data += batches[row.batch].rows[batches[row.batch].rowRanges[row.row]] }
        data += BinaryCopyEncoder.trailer
        return try connection.copyInReturningRows(statement, data: data)
    }

    static let beginAndCopyIDsStatement: SQL = "BEGIN; COPY event_ids (event_id, app_id) FROM STDIN (FORMAT binary)"

    /// The events' COPY, which the commit and its check follow in the same text.
    static let copyStatement: SQL = """
        COPY events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                     experiment_id, experiment_arm, payload)
        FROM STDIN (FORMAT binary)
        """

    /// `copyStatement`, the commit and its check, for each floor a server accepts (made once:
    /// every fast-path commit sends one).
    private static let copyAndCommitMade = PostgresConfiguration.acceptedSynchronousStandbys.map {
        StandbyConfirmation.Statements.requiring($0).commit(after: copyStatement)
    }

    private static func copyAndCommit(on connection: Connection) -> SQL {
        let floor = connection.configuration.requiredSynchronousStandbys
        return copyAndCommitMade.indices.contains(floor)
            ? copyAndCommitMade[floor] : StandbyConfirmation.statements(on: connection).commit(after: copyStatement)
    }

    static let stagingCopyStatement: SQL = """
        COPY engage_append_staging_v1 (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                    experiment_id, experiment_arm, payload)
        FROM STDIN (FORMAT binary)
        """

    // MARK: Read

    /// The columns a fold reads, then the rest of a `StoredEvent`'s.
    static let foldableColumns = """
        position, transaction_id, event_id, app_id, notification_id, type, category, device_id, occurred_at, payload
        """
    static let columns = foldableColumns + ", recorded_at, experiment_id, experiment_arm"

    /// Up to `limit` events after `position`, in log order. Only events of transactions older than
    /// every transaction still running are returned, so nothing can later appear before them.
    public func read(after position: LogPosition, limit: Int) async throws -> [StoredEvent] {
        try await pool.withConnection { connection in try Self.read(after: position, limit: limit, on: connection) }
    }

    public static func read(after position: LogPosition, limit: Int, on connection: Connection) throws -> [StoredEvent] {
        try readColumns(columns, after: position, limit: limit, on: connection).rows.map(decode)
    }

    /// `read(after:limit:on:)` with only the columns a fold reads (the projector's catch-up).
    public static func readFoldable(after position: LogPosition, limit: Int, on connection: Connection) throws -> [FoldableEvent] {
        try readColumns(foldableColumns, after: position, limit: limit, on: connection).rows.map(decodeFoldable)
    }

    /// The rows of `columns` of up to `limit` visible events after `position`, in log order.
    ///
    /// Throws `TransactionIDsBehindLog` when there are none because `position` is at a transaction
    /// the database has not assigned yet (a log moved into a new cluster with pg_dump): nothing
    /// appended there would ever come after it, and reading nothing, silently, forever, is what
    /// the projector did before. Checked only when nothing was read, which costs an idle reader
    /// one more statement per poll, and `position` must come from this database (a position read
    /// on the primary is ahead of a lagging standby's counter).
    private static func readColumns(_ columns: String, after position: LogPosition, limit: Int,
                                    on connection: Connection) throws -> QueryResult {
        let rows = try connection.query("""
            SELECT \(unsafeSQL: columns)
            FROM events
            WHERE (transaction_id, position) > (\(String(position.transactionID))::xid8, \(position.sequence))
              AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY transaction_id, position
            LIMIT \(limit)
            """)
        if rows.rowCount == 0 && position.transactionID > 0 {
            try TransactionCounter.check(position.transactionID, heldBy: .checkpoint, next: TransactionCounter.next(on: connection))
        }
        return rows
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

    static func decodeFoldable(_ row: PostgresRow) throws -> FoldableEvent {
        guard let eventID = EventID(bytes: try row.cell(2).uuidBytes()) else {
            throw PostgresError(kind: .decoding, message: "bad event id")
        }
        return FoldableEvent(
            position: LogPosition(transactionID: try row.decode(1), sequence: try row.decode(0)),
            eventID: eventID,
            appID: try row.decode(3),
            notificationID: try row.decode(4),
            type: try row.decode(5),
            category: try row.decode(6),
            deviceID: try row.decode(7),
            occurredAt: Timestamp(microsecondsSinceEpoch: try row.cell(8).unixMicroseconds()),
            payload: try row.cell(9).utf8Bytes())
    }

    static func decode(_ row: PostgresRow) throws -> StoredEvent {
        let event = try decodeFoldable(row)
        return StoredEvent(
            position: event.position, eventID: event.eventID, appID: event.appID, notificationID: event.notificationID,
            type: event.type, category: event.category, deviceID: event.deviceID, occurredAt: event.occurredAt,
            recordedAt: Timestamp(microsecondsSinceEpoch: try row.cell(10).unixMicroseconds()),
            experimentID: try row.decode(11),
            experimentArm: try row.decode(12),
            payload: event.payload)
    }
}
