import EngageConsole
import EngageCore
import Postgres
import Projections

/// What the console reads from the database besides experiments: the report through the same
/// `ReportQuery` as `GET /v1/report` and `engage report`, the app's categories for the filter,
/// and the projector's checkpoint. Closures, so that the server decides where each is read.
public struct ConsoleReads: Sendable {
    public var report: @Sendable (ReportQuery) async throws -> EngagementReport
    public var categories: @Sendable (_ appID: String) async throws -> [String]
    public var projector: @Sendable () async throws -> ProjectorCheckpoint

    public init(report: @escaping @Sendable (ReportQuery) async throws -> EngagementReport,
                categories: @escaping @Sendable (_ appID: String) async throws -> [String],
                projector: @escaping @Sendable () async throws -> ProjectorCheckpoint) {
        self.report = report
        self.categories = categories
        self.projector = projector
    }

    /// Everything read on `pool`, the report at the wall clock of `time`.
    public static func on(_ pool: ConnectionPool, now: @escaping @Sendable () -> Timestamp) -> ConsoleReads {
        ConsoleReads(
            report: { query in try await query.run(on: pool, now: now()) },
            categories: { appID in try await pool.withConnection { try ConsoleQueries.categories(appID: appID, on: $0) } },
            projector: { try await pool.withConnection { try ConsoleQueries.checkpoint(on: $0) } })
    }
}

/// The engagement projection's checkpoint and how much of the log lies past it.
public struct ProjectorCheckpoint: Sendable, Equatable {
    public var eventsProcessed: Int
    public var updatedAt: Timestamp?
    /// Seconds since the checkpoint moved, by the database's clock.
    public var ageSeconds: Double?
    /// Events stored after the checkpoint, counted up to `ConsoleQueries.eventsBehindLimit`.
    public var eventsBehind: Int

    public init(eventsProcessed: Int, updatedAt: Timestamp?, ageSeconds: Double?, eventsBehind: Int) {
        self.eventsProcessed = eventsProcessed
        self.updatedAt = updatedAt
        self.ageSeconds = ageSeconds
        self.eventsBehind = eventsBehind
    }
}

/// The console's own two queries.
enum ConsoleQueries {
    /// Counting the events past the checkpoint stops here, so that a page costs little however
    /// far behind the projector is.
    static let eventsBehindLimit = 100_000

    /// The app's categories in the engagement read model (a few rows per category and day).
    static func categories(appID: String, on connection: Connection) throws -> [String] {
        try connection.query("SELECT DISTINCT category FROM engagement_daily WHERE app_id = \(appID) ORDER BY 1").rows.map {
            try $0.decode(0, as: String.self)
        }
    }

    static func checkpoint(on connection: Connection) throws -> ProjectorCheckpoint {
        let rows = try connection.query("""
            SELECT events_processed, updated_at, extract(epoch FROM now() - updated_at)::float8, transaction_id::text, position
            FROM projection_checkpoints WHERE projection = \(EngagementStore.projectionName)
            """)
        let row = rows.rows.first
        // Without a checkpoint row the projector has not started: everything is waiting.
        let transaction = try row?.decode(3, as: String.self) ?? "0"
        let position = try row?.decode(4, as: Int64.self) ?? 0
        let behind = try connection.query("""
            SELECT count(*) FROM (
                SELECT 1 FROM events WHERE (transaction_id, position) > (\(transaction)::xid8, \(position))
                LIMIT \(eventsBehindLimit)) AS waiting
            """)[0].decode(0, as: Int.self)
        return ProjectorCheckpoint(
            eventsProcessed: try row?.decode(0, as: Int.self) ?? 0,
            updatedAt: try row.map { Timestamp(microsecondsSinceEpoch: try $0.cell(1).unixMicroseconds()) },
            ageSeconds: try row?.decode(2, as: Double.self),
            eventsBehind: behind)
    }
}
