import EmbeddedPostgres
import EngageAPI
import EventStore
import Foundation
import Postgres
import Runtime

/// The database a command works on: the one named by `--database`, or engage's own local
/// cluster, started when needed and stopped again by the process that started it.
struct DatabaseSetup: Sendable {
    let configuration: PostgresConfiguration
    let embedded: EmbeddedPostgres?
    let startedHere: Bool
    let logger: Logger

    /// Resolves, starts (if local) and optionally migrates the database. A command that appends or
    /// folds (`serve`, `project`, `scheduler`) passes `requireTransactionIDsAhead`: it refuses to
    /// start on a database whose transaction counter is behind the log (`TransactionIDHealth`).
    /// With `migrateOnlyWhenPending`, a database that holds every migration is only read, and
    /// nothing is committed (its views are left to `engage serve` and `engage migrate`).
    static func open(_ arguments: ParsedArguments, logger: Logger, migrate: Bool = true, migrateOnlyWhenPending: Bool = false,
                     requireTransactionIDsAhead: Bool = false) throws -> DatabaseSetup {
        let setup: DatabaseSetup
        if let url = CommonOptions.externalDatabase(arguments) {
            setup = DatabaseSetup(configuration: PostgresConfiguration(connectionString: url), embedded: nil, startedHere: false, logger: logger)
        } else {
            let cluster = try localCluster(arguments)
            let outcome = try cluster.start()
            logger.info("postgres.local", ["data.dir": cluster.dataDirectory,
                                           "state": outcome == .started ? "started" : "already-running"])
            setup = DatabaseSetup(configuration: cluster.configuration(), embedded: cluster,
                                  startedHere: outcome == .started, logger: logger)
        }
        if migrate {
            if migrateOnlyWhenPending { try setup.migrateIfPending() } else { try setup.migrate() }
        }
        if requireTransactionIDsAhead {
            do {
                try setup.requireTransactionIDsAhead()
            } catch {
                setup.close()
                throw error
            }
        }
        return setup
    }

    /// Throws `TransactionIDsBehindLog` (logged first) when the database's transaction counter is
    /// behind the log: every event appended would sort before what the readers have read and never
    /// be folded, so nothing is appended or folded until the counter is repaired
    /// (docs/reliability.md, "Transaction ids behind the log").
    func requireTransactionIDsAhead() throws {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        let health = try TransactionIDHealth.read(on: connection)
        guard let problem = health.problem else { return }
        logger.error("engage.transaction-ids-behind-log", [
            "held.transaction": String(problem.held), "database.next": String(problem.next),
            "repair.epoch": String(health.repair.epoch), "repair": "engage db transaction-ids",
        ])
        throw problem
    }

    /// Runs `body` on a pool of `size` connections to the command's database (not migrated when
    /// `migrate` is false, only when a migration is missing with `migrateOnlyWhenPending`); the
    /// pool, and a local cluster started for it, are closed after.
    static func withPool<T: Sendable>(_ arguments: ParsedArguments, size: Int, logger: Logger, migrate: Bool = true,
                                      migrateOnlyWhenPending: Bool = false,
                                      requireTransactionIDsAhead: Bool = false, requiredSynchronousStandbys: Int = 0,
                                      _ body: (ConnectionPool) async throws -> T) async throws -> T {
        let setup = try open(arguments, logger: logger, migrate: migrate, migrateOnlyWhenPending: migrateOnlyWhenPending,
                             requireTransactionIDsAhead: requireTransactionIDsAhead)
        defer { setup.close() }
        var configuration = setup.configuration
        configuration.requiredSynchronousStandbys = requiredSynchronousStandbys
        let pool = ConnectionPool(configuration: configuration, size: size)
        do {
            let result = try await body(pool)
            await pool.close()
            return result
        } catch {
            await pool.close()
            throw error
        }
    }

    static func localCluster(_ arguments: ParsedArguments) throws -> EmbeddedPostgres {
        let directory = arguments[CommonOptions.dataDirectory] ?? EmbeddedPostgres.defaultDataDirectory()
        return try EmbeddedPostgres(options: .init(dataDirectory: directory))
    }

    /// `migrate()` only when the database lacks a migration (or holds one that differs, which
    /// `migrate()` then reports). A migration run replaces every view, and that commit waits for
    /// the synchronous standbys like any other: on a primary waiting for one it lost, it would
    /// never end, and a command bounded by `--commit-timeout` (`engage experiment`) would wait
    /// for ever before its bounded change. Reading the migrations commits nothing, nor does
    /// making the log's partitions for the coming days when they exist already (a migration run
    /// makes them too, and a change appends its entry to the log).
    func migrateIfPending() throws {
        let migrator = try Migrator.fromSQLDirectory()
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        guard try migrator.pendingProblem(connection) == nil else {
            try migrate()
            return
        }
        try EventPartitions.ensure(on: connection)
    }

    @discardableResult
    func migrate() throws -> Migrator.Report {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        let report = try Migrator.fromSQLDirectory().migrate(connection, logger: logger)
        for file in report.applied { logger.info("migration.applied", ["file": file]) }
        return report
    }

    /// Stops the local cluster if this process started it and nobody else is connected.
    func close() {
        guard let embedded, startedHere else { return }
        // This process's own connections were just closed, but their backends leave
        // pg_stat_activity a moment later: wait up to 2 s before calling them someone else's.
        var others = (try? embedded.clientSessionCount()) ?? 0
        for _ in 0..<40 where others > 0 {
            usleep(50_000)
            others = (try? embedded.clientSessionCount()) ?? 0
        }
        if others > 0 {
            logger.warning("postgres.left-running", [
                "sessions": String(others), "hint": "another client is connected; stop it with: engage db stop",
            ])
            return
        }
        do {
            try embedded.stop()
            logger.info("postgres.stopped", ["data.dir": embedded.dataDirectory])
        } catch {
            logger.warning("postgres.stop-failed", ["error": "\(error)"])
        }
    }
}
