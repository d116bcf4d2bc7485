import EngageConsole
import EngageCore
import Postgres
import Projections

/// What the console reads from the database besides experiments: the report through the same
/// `ReportQuery` as `GET /v1/report` and `engage report`, the app's categories for the filter,
/// and the projector's checkpoint and lag (`ProjectorLag`, as `/metrics` reads it). Closures, so that the server decides where each is read.
public struct ConsoleReads: Sendable {
    public var report: @Sendable (ReportQuery) async throws -> EngagementReport
    public var categories: @Sendable (_ appID: String) async throws -> [String]
    /// nil when the database gave no reading within `HealthRoutes.databaseAnswerLimit`.
    public var projector: @Sendable () async throws -> ProjectorLag?

    public init(report: @escaping @Sendable (ReportQuery) async throws -> EngagementReport,
                categories: @escaping @Sendable (_ appID: String) async throws -> [String],
                projector: @escaping @Sendable () async throws -> ProjectorLag?) {
        self.report = report
        self.categories = categories
        self.projector = projector
    }

    /// Everything read on `pool`, the report at the wall clock of `time`.
    public static func on(_ pool: ConnectionPool, now: @escaping @Sendable () -> Timestamp) -> ConsoleReads {
        ConsoleReads(
            report: { query in try await query.run(on: pool, now: now()) },
            categories: { appID in try await pool.withConnection { try ConsoleQueries.categories(appID: appID, on: $0) } },
            projector: { try await ProjectorLag.read(from: pool, within: HealthRoutes.databaseAnswerLimit) })
    }
}

/// The console's own query.
enum ConsoleQueries {
    /// The app's categories in the engagement read model (a few rows per category and day).
    static func categories(appID: String, on connection: Connection) throws -> [String] {
        try connection.query("SELECT DISTINCT category FROM engagement_daily WHERE app_id = \(appID) ORDER BY 1").rows.map {
            try $0.decode(0, as: String.self)
        }
    }
}
