import EventStore
import HTTPServer
import Postgres
import Projections
import Runtime

/// `/healthz` (the process answers), `/readyz` (the database answers, its migrations are
/// current, and commits can be confirmed on the synchronous standbys it is configured with) and `/metrics` (Prometheus text).
public struct HealthRoutes: Sendable {
    let pool: ConnectionPool
    let migrator: Migrator
    let registry: MetricsRegistry
    let projectorLag: ProjectorLagGauges

    public init(pool: ConnectionPool, migrator: Migrator, registry: MetricsRegistry) {
        self.pool = pool
        self.migrator = migrator
        self.registry = registry
        projectorLag = ProjectorLagGauges(registry: registry)
    }

    func healthz(_ request: HTTPRequest) async -> HTTPResponse {
        .json(#"{"status":"ok"}"#, status: 200)
    }

    /// How long `/readyz` waits for the database: one that does not answer within it (a frozen
    /// host, a pool full of stuck calls) is unavailable, and a probe gets its 503 in time.
    static let databaseCheckLimit = Duration.seconds(2)

    func readyz(_ request: HTTPRequest) async -> HTTPResponse {
        let (migrator, pool) = (self.migrator, self.pool)
        do {
            let checked = try await withTimeLimit(Self.databaseCheckLimit) {
                try await pool.withConnection { connection in
                    (try migrator.pendingProblem(connection), try StandbyConfirmation.roleCannotConfirm(on: connection))
                }
            }
            guard let (problem, cannotConfirm) = checked else { return APIProblems.response(APIProblems.unavailable, retryAfter: 5) }
            if let problem {
                return APIProblems.response(HTTPProblem(status: 503, slug: "migrations-pending", title: "The database schema is not current",
                                                        detail: problem), retryAfter: 5)
            }
            if cannotConfirm {
                return APIProblems.response(APIProblems.standbysUnverifiable, retryAfter: 5)
            }
            return .json(#"{"status":"ready","database":"ok","migrations":"current"}"#, status: 200)
        } catch {
            return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
        }
    }

    func metrics(_ request: HTTPRequest) async -> HTTPResponse {
        await projectorLag.refresh(from: pool)
        var response = HTTPResponse.text(registry.renderPrometheus(), status: 200)
        response.headers.set("Content-Type", MetricsRegistry.contentType)
        return response
    }
}
