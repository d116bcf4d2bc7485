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

    /// How long `/readyz`, `/metrics` (for the projector's lag) and the console's ingestion page
    /// wait for the database: a frozen host, or a pool whose every connection is busy or stuck,
    /// must not take the probe or the scrape down with it when an operator needs them most. A
    /// reading takes tens of milliseconds otherwise. A connection being made (after an
    /// interrupted one) can add its `connect_timeout`, which no interruption cuts short.
    static let databaseAnswerLimit = Duration.seconds(2)

    func readyz(_ request: HTTPRequest) async -> HTTPResponse {
        let (migrator, pool) = (self.migrator, self.pool)
        do {
            let answer = try await withTimeLimit(Self.databaseAnswerLimit) {
                try await pool.withConnection { connection in
                    (try migrator.pendingProblem(connection), try StandbyConfirmation.roleCannotConfirm(on: connection))
                }
            }
            guard let (problem, cannotConfirm) = answer else { return APIProblems.response(APIProblems.unavailable, retryAfter: 5) }
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
        await projectorLag.refresh(from: pool, within: Self.databaseAnswerLimit)
        var response = HTTPResponse.text(registry.renderPrometheus(), status: 200)
        response.headers.set("Content-Type", MetricsRegistry.contentType)
        return response
    }
}
