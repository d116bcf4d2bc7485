import Runtime

/// One subcommand of `engage`: its definition (options and help) and what it does.
protocol EngageCommand: SendableMetatype {
    static var definition: Command { get }
    static func run(_ arguments: ParsedArguments) async throws
}

/// A subcommand's definition and entry point, without existential metatypes.
struct Subcommand: Sendable {
    let definition: Command
    let run: @Sendable (ParsedArguments) async throws -> Void

    init<C: EngageCommand>(_ type: C.Type) {
        definition = C.definition
        run = { try await C.run($0) }
    }
}

/// Options shared by every subcommand that reaches the database or logs.
enum CommonOptions {
    static let database: [Command.Option] = [
        .init("database", value: "url", help: "PostgreSQL connection URL or key=value string; without it engage runs its own local PostgreSQL.",
              environment: "ENGAGE_DATABASE_URL"),
        .init("data-dir", value: "path", help: "Data directory of the local PostgreSQL engage runs when no --database is given (default ./.engage/postgres).",
              environment: "ENGAGE_DATA_DIR"),
    ]

    static let logging: [Command.Option] = [
        .init("log-level", value: "level", help: "Least severe log level written: trace, debug, info, notice, warning or error.",
              environment: "ENGAGE_LOG_LEVEL", default: "info"),
        .init("log-format", value: "format", help: "Log line format: logfmt or json.", environment: "ENGAGE_LOG_FORMAT", default: "logfmt"),
    ]

    static func logger(_ arguments: ParsedArguments, label: String = "engage") throws -> Logger {
        Logger(label: label, level: try arguments.value("log-level", default: LogLevel.info),
               format: try arguments.value("log-format", default: LogFormat.logfmt))
    }
}
