import Postgres
import Runtime

/// Options shared by every subcommand that reaches the database or logs.
enum CommonOptions {
    /// What `--app` takes wherever it names an app: an id `engage keys create` would accept (no
    /// other app has events or keys, so any other value could only select nothing, silently).
    static let appID = Validation("use 1-64 letters, digits, '.', '_' or '-'", accepts: KeysCommand.isValidAppID)

    /// What an option naming an ingest key takes: printable ASCII without spaces, as
    /// `engage keys create` prints them (an empty one was sent as `Bearer ` and refused 401).
    static let ingestKey = Validation<String>("expected a key as printed by engage keys create", accepts: isIngestKey)

    static func isIngestKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F } && key.utf8.count <= 200
    }

    /// A connection string libpq cannot read is the operator's typo, not an outage: refused as a
    /// usage error (64) before anything connects, without repeating it (it may hold a password).
    static let connectionString = Validation<String>(
        "expected a PostgreSQL connection URL (postgresql://...) or key=value string libpq can read, with ports from 1 to 65535") {
        $0.isEmpty || PostgresConfiguration.isReadable($0)
    }

    static let database = Option<String?>(
        "database", value: "url", help: "PostgreSQL connection URL or key=value string; without it engage runs its own local PostgreSQL.",
        environment: "ENGAGE_DATABASE_URL", secret: true, validate: connectionString)
    static let dataDirectory = Option<String?>(
        "data-dir", value: "path", help: "Data directory of the local PostgreSQL engage runs when no --database is given (default ./.engage/postgres).",
        environment: "ENGAGE_DATA_DIR", validate: .path)
    static let logLevel = Option(
        "log-level", value: "level", help: "Least severe log level written: trace, debug, info, notice, warning or error.",
        environment: "ENGAGE_LOG_LEVEL", default: LogLevel.info)
    static let logFormat = Option("log-format", value: "format", help: "Log line format: logfmt or json.", environment: "ENGAGE_LOG_FORMAT",
                                  default: LogFormat.logfmt)

    /// `--database` and `--data-dir`.
    static let databaseOptions: [any CommandOption] = [database, dataDirectory]
    /// The database options and `--log-level`, `--log-format`.
    static let databaseAndLogging: [any CommandOption] = [database, dataDirectory, logLevel, logFormat]

    static func logger(_ arguments: ParsedArguments, label: String = "engage") -> Logger {
        Logger(label: label, level: arguments[logLevel], format: arguments[logFormat])
    }

    /// The logger of a command whose output is its result: warnings and errors only.
    static func quietLogger(_ arguments: ParsedArguments) -> Logger {
        var logger = logger(arguments)
        logger.level = max(logger.level, .warning)
        return logger
    }

    /// The external database's URL, nil when engage runs its own local PostgreSQL.
    static func externalDatabase(_ arguments: ParsedArguments) -> String? {
        guard let url = arguments[database], !url.isEmpty else { return nil }
        return url
    }
}
