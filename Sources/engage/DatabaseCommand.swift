import EmbeddedPostgres
import Foundation
import Runtime

/// `engage db start|stop|status|psql`: the local PostgreSQL engage runs for itself.
enum DatabaseCommand: EngageCommand {
    static let definition = Command(
        name: "db",
        abstract: "Manage the local PostgreSQL that engage runs when no --database is given.",
        subcommands: [
            Command(name: "start", abstract: "Start the local PostgreSQL (creating and migrating it if needed); it keeps running.",
                    options: localOptions),
            Command(name: "stop", abstract: "Stop the local PostgreSQL.", options: localOptions),
            Command(name: "status", abstract: "Show whether the local PostgreSQL runs, where, and how to connect.", options: localOptions),
            Command(name: "psql", abstract: "Open psql on engage's database (the local one, or --database).",
                    options: CommonOptions.database),
        ])

    static let localOptions: [Command.Option] = CommonOptions.database + CommonOptions.logging

    static func run(_ arguments: ParsedArguments) async throws {
        if arguments.commandPath.last != "psql", let url = arguments.value("database"), !url.isEmpty {
            throw UsageError(code: .invalidValue,
                             message: "engage db \(arguments.commandPath.last ?? "") manages the local PostgreSQL; unset --database / ENGAGE_DATABASE_URL to use it",
                             usage: definition.usage(path: arguments.commandPath))
        }
        switch arguments.commandPath.last {
        case "start":
            let logger = try CommonOptions.logger(arguments)
            let setup = try DatabaseSetup.open(arguments, logger: logger)
            print("PostgreSQL runs in \(setup.embedded!.dataDirectory)")
            print("connect with: \(setup.configuration.connectionString)")
        case "stop":
            let cluster = try DatabaseSetup.localCluster(arguments)
            try cluster.stop()
            print("PostgreSQL in \(cluster.dataDirectory) is stopped")
        case "status":
            let cluster = try DatabaseSetup.localCluster(arguments)
            let status = try cluster.status()
            switch status {
            case .notInitialized: print("no local PostgreSQL in \(cluster.dataDirectory) yet (engage db start creates it)")
            case .stopped: print("stopped: \(cluster.dataDirectory)")
            case .running:
                print("running: \(cluster.dataDirectory)")
                print("connect with: \(cluster.configuration().connectionString)")
            }
        case "psql":
            if let url = arguments.value("database"), !url.isEmpty {
                throw ProcessRunner.exec(["/usr/bin/psql", url])
            }
            let cluster = try DatabaseSetup.localCluster(arguments)
            guard try cluster.status() == .running else {
                throw EmbeddedPostgresError("the local PostgreSQL in \(cluster.dataDirectory) is not running; start it with: engage db start")
            }
            throw ProcessRunner.exec([cluster.clientProgram("psql"), cluster.configuration().connectionString])
        default:
            break
        }
    }
}
