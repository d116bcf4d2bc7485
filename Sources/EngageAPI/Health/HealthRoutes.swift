import EventStore
import HTTPServer
import Postgres
import Projections
import Runtime

/// `/healthz` (the process answers), `/readyz` (the database answers, its migrations are
/// current, commits can be confirmed on the synchronous standbys it is configured with, and its
/// transaction counter is ahead of the log: `TransactionIDHealth`) and `/metrics` (Prometheus text).
public struct HealthRoutes: Sendable {
    let pool: ConnectionPool
    let migrator: Migrator
    let registry: MetricsRegistry
    let projectorLag: ProjectorLagGauges
    let transactionIDsBehind: Gauge

    public init(pool: ConnectionPool, migrator: Migrator, registry: MetricsRegistry) {
        self.pool = pool
        self.migrator = migrator
        self.registry = registry
        projectorLag = ProjectorLagGauges(registry: registry)
        transactionIDsBehind = registry.gauge(
            "engage_postgres_transaction_ids_behind_log",
            help: "1 when PostgreSQL's next transaction id is not above the log's newest event or a reader's checkpoint (a database moved with pg_dump into a new cluster: nothing appended would be folded; docs/reliability.md), else 0; NaN when the database gave no reading in time.")
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

    /// What `/readyz` reads: a pending migration, whether commits can be confirmed on the
    /// standbys, how many required standbys are missing, and the transaction counter's problem.
    private typealias DatabaseReadiness = (pending: String?, cannotConfirm: Bool, missingStandbys: Int, behind: TransactionIDsBehindLog?)

    func readyz(_ request: HTTPRequest) async -> HTTPResponse {
        let (migrator, pool) = (self.migrator, self.pool)
        do {
            let answer = try await withTimeLimit(Self.databaseAnswerLimit) {
                try await pool.withConnection { connection -> DatabaseReadiness? in
                    // A standby answers every read below, and takes no write: a demoted primary
                    // the pool reached again (a URL without target_session_attrs=read-write).
                    // So does a server that makes every transaction read-only without being in
                    // recovery (an old primary fenced with default_transaction_read_only, a managed
                    // server out of disk): refused as a write would be, which also closes this
                    // session, so that the next reading connects again (with several hosts, to the
                    // one that takes writes now).
                    let mode = try connection.query("SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'")[0]
                    if try mode.decode(0, as: Bool.self) { return nil }
                    if try mode.decode(1, as: Bool.self) {
                        throw PostgresError(kind: .server, sqlState: "25006", message: "every transaction is read-only")
                    }
                    let pending = try migrator.pendingProblem(connection)
                    // The readers' tables exist only once migrated.
                    let cannotConfirm = try StandbyConfirmation.roleCannotConfirm(on: connection)
                    return (pending, cannotConfirm, cannotConfirm ? 0 : try StandbyConfirmation.missingRequiredStandbys(on: connection),
                            pending == nil ? try TransactionIDHealth.read(on: connection).problem : nil)
                }
            }
            guard let answer else { return APIProblems.response(APIProblems.unavailable, retryAfter: 5) }
            guard let (problem, cannotConfirm, missingStandbys, behind) = answer else {
                return APIProblems.response(APIProblems.databaseReadOnly, retryAfter: 5)
            }
            if let problem {
                return APIProblems.response(HTTPProblem(status: 503, slug: "migrations-pending", title: "The database schema is not current",
                                                        detail: problem), retryAfter: 5)
            }
            if cannotConfirm {
                return APIProblems.response(APIProblems.standbysUnverifiable, retryAfter: 5)
            }
            if missingStandbys > 0 {
                return APIProblems.response(APIProblems.requiredStandbysMissing(missingStandbys), retryAfter: 5)
            }
            if let behind {
                // Not ready to take events: each would sort before what the readers have read.
                // Only a repair by hand ends it, hence the longer Retry-After.
                return APIProblems.response(APIProblems.transactionIDsBehindLog(behind), retryAfter: 60)
            }
            return .json(#"{"status":"ready","database":"ok","migrations":"current"}"#, status: 200)
        } catch let error as PostgresError where error.isReadOnlyServer {
            return APIProblems.response(APIProblems.databaseTakesNoWrites, retryAfter: 5)
        } catch {
            return APIProblems.response(APIProblems.unavailable, retryAfter: 5)
        }
    }

    func metrics(_ request: HTTPRequest) async -> HTTPResponse {
        await projectorLag.refresh(from: pool, within: Self.databaseAnswerLimit)
        let pool = self.pool
        let health = try? await withTimeLimit(Self.databaseAnswerLimit) {
            try await pool.withConnection { try TransactionIDHealth.read(on: $0) }
        }
        transactionIDsBehind.set(health.map { $0.problem == nil ? 0 : 1 } ?? .nan)
        var response = HTTPResponse.text(registry.renderPrometheus(), status: 200)
        response.headers.set("Content-Type", MetricsRegistry.contentType)
        return response
    }
}
