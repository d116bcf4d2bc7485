import EmbeddedPostgres
import Foundation
import Postgres
import Runtime

/// `engage db start|stop|status|psql|url|transaction-ids`: the local PostgreSQL engage runs for
/// itself, and the way into whichever database engage uses.
enum DatabaseCommand {
    static let psqlArguments = Argument.remaining("psql-argument", help: "Passed to psql after the connection, e.g. -- -c 'select 1'.")

    static let definition = Command(
        name: "db",
        abstract: "Manage the local PostgreSQL that engage runs when no --database is given.",
        subcommands: [
            Command(name: "start", abstract: "Start the local PostgreSQL (creating and migrating it if needed); it keeps running.",
                    options: CommonOptions.databaseAndLogging, run: start),
            Command(name: "stop", abstract: "Stop the local PostgreSQL.", options: CommonOptions.databaseAndLogging, run: stop),
            Command(name: "status", abstract: "Show whether the local PostgreSQL runs, where, and how to connect.",
                    options: CommonOptions.databaseAndLogging, run: status),
            Command(name: "psql", abstract: "Run psql on engage's database (the local one, or --database), with the arguments after --.",
                    options: CommonOptions.databaseOptions, arguments: [psqlArguments], run: psql),
            Command(name: "url", abstract: "Print the connection URL of engage's database (the local one, or --database as given) for other tools.",
                    options: CommonOptions.databaseOptions, run: url),
            TransactionIDsCommand.definition,
        ])

    static func start(_ arguments: ParsedArguments) async throws {
        try refuseExternalDatabase(arguments)
        let setup = try DatabaseSetup.open(arguments, logger: CommonOptions.logger(arguments))
        print("PostgreSQL runs in \(setup.embedded!.dataDirectory)")
        print("connect with: \(setup.configuration.connectionString)")
    }

    static func stop(_ arguments: ParsedArguments) async throws {
        try refuseExternalDatabase(arguments)
        let cluster = try DatabaseSetup.localCluster(arguments)
        try cluster.stop()
        print("PostgreSQL in \(cluster.dataDirectory) is stopped")
    }

    static func status(_ arguments: ParsedArguments) async throws {
        try refuseExternalDatabase(arguments)
        let cluster = try DatabaseSetup.localCluster(arguments)
        switch try cluster.status() {
        case .notInitialized: print("no local PostgreSQL in \(cluster.dataDirectory) yet (engage db start creates it)")
        case .stopped: print("stopped: \(cluster.dataDirectory)")
        case .running:
            print("running: \(cluster.dataDirectory)")
            print("connect with: \(cluster.configuration().connectionString)")
        }
    }

    /// Replaces this process with psql, so that it owns the terminal, its signals and its exit status.
    static func psql(_ arguments: ParsedArguments) async throws {
        let passed = arguments.all(psqlArguments)
        if let url = CommonOptions.externalDatabase(arguments) {
            // psql's command line is anyone's to read (`ps`); its environment only its user's.
            let separated = PostgresConfiguration.separatingPassword(url)
            if let password = separated.password { setenv("PGPASSWORD", password, 1) }
            throw ProcessRunner.exec(["/usr/bin/psql", "--dbname", separated.connectionString] + passed)
        }
        let cluster = try DatabaseSetup.localCluster(arguments)
        guard try cluster.status() == .running else {
            throw EmbeddedPostgresError("the local PostgreSQL in \(cluster.dataDirectory) is not running; start it with: engage db start")
        }
        throw ProcessRunner.exec([cluster.clientProgram("psql"), "--dbname", cluster.configuration().connectionString] + passed)
    }

    static func url(_ arguments: ParsedArguments) async throws {
        if let url = CommonOptions.externalDatabase(arguments) {
            print(url)
            return
        }
        let cluster = try DatabaseSetup.localCluster(arguments)
        print(cluster.connectionURL())
        if try cluster.status() != .running {
            FileHandle.standardError.write(Data("note: the local PostgreSQL in \(cluster.dataDirectory) is not running; start it with: engage db start\n".utf8))
        }
    }

    private static func refuseExternalDatabase(_ arguments: ParsedArguments) throws(UsageError) {
        let database = CommonOptions.database
        guard CommonOptions.externalDatabase(arguments) != nil else { return }
        throw arguments.usageError(
            .invalidValue,
            "\(arguments.commandPath.joined(separator: " ")) manages the local PostgreSQL; unset \(database.longName) / \(database.environment ?? "") to use it")
    }
}
