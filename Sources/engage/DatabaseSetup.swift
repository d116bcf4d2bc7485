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
    static func open(_ arguments: ParsedArguments, logger: Logger, migrate: Bool = true,
                     requireTransactionIDsAhead: Bool = false) throws -> DatabaseSetup {
        // A SIGTERM or Ctrl-C before the command's services listen for them ended the process at
        // once, and a local PostgreSQL it had started ran on with no one to stop it (the server is
        // in a session of its own: a terminal's Ctrl-C does not reach it). Held while the local
        // cluster starts; once it runs, one that started it stops it at the signal (its migration
        // then fails at once, however long it would have waited) and ends, and one that found it
        // running lets the signals end the process as before: nothing of its own is left.
        var held = CommonOptions.externalDatabase(arguments) == nil ? HeldSignals() : nil
        let setup: DatabaseSetup
        if let url = CommonOptions.externalDatabase(arguments) {
            setup = DatabaseSetup(configuration: PostgresConfiguration(connectionString: url), embedded: nil, startedHere: false, logger: logger)
        } else {
            let cluster = try localCluster(arguments)
            let outcome = try cluster.start()
            logger.info("postgres.local", ["data.dir": cluster.dataDirectory,
                                           "state": outcome == .started ? "started" : "already-running"])
            if outcome == .started {
                held?.onFirst { try? cluster.stop() }
            } else {
                // One that came while it waited its turn to start (`StartLock`) ends it now.
                if let signal = held?.first { throw StoppedDuringStartUp(signal: signal) }
                held = nil
            }
            setup = DatabaseSetup(configuration: cluster.configuration(), embedded: cluster,
                                  startedHere: outcome == .started, logger: logger)
        }
        do {
            if migrate { try setup.migrate() }
            if requireTransactionIDsAhead { try setup.requireTransactionIDsAhead() }
            // From here a signal no longer stops the cluster under the command that goes on.
            if let signal = held?.disarm() { throw StoppedDuringStartUp(signal: signal) }
        } catch let stopped as StoppedDuringStartUp {
            setup.close()
            throw stopped
        } catch {
            // A cluster this process started is not left running with no one to stop it.
            setup.close()
            // A migration cut off by the signal's stop fails with the connection it lost; what it
            // failed with is said too, in case it was something else.
            if let signal = held?.disarm() { throw StoppedDuringStartUp(signal: signal, meanwhile: "\(error)") }
            throw error
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
    /// `migrate` is false); the pool, and a local cluster started for it, are closed after.
    static func withPool<T: Sendable>(_ arguments: ParsedArguments, size: Int, logger: Logger, migrate: Bool = true,
                                      requireTransactionIDsAhead: Bool = false, requiredSynchronousStandbys: Int = 0,
                                      _ body: (ConnectionPool) async throws -> T) async throws -> T {
        let setup = try open(arguments, logger: logger, migrate: migrate, requireTransactionIDsAhead: requireTransactionIDsAhead)
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

/// A SIGTERM or Ctrl-C came while the command started its local PostgreSQL: the cluster it
/// started is stopped again, and the command ends as the signal would have ended it.
struct StoppedDuringStartUp: Error, CustomStringConvertible {
    let signal: UnixSignal
    /// What the start failed with after the signal, if it failed.
    var meanwhile: String?

    var description: String {
        "stopped by \(signal) while starting the local PostgreSQL (stopped again if this command started it)"
            + (meanwhile.map { "; the start ended with: \($0)" } ?? "")
    }
    /// 128 + the signal's number, as a shell reports a process its signal ended.
    var exitStatus: Int32 { 128 + signal.number }
}
