import Runtime
import Testing

private let serve = Command(
    name: "serve",
    abstract: "Run the ingestion and reporting server.",
    options: [
        .init("listen", value: "address", help: "Address to listen on.", default: "127.0.0.1:8080"),
        .init("database", value: "url", help: "PostgreSQL connection URL.", environment: "ENGAGE_DATABASE_URL"),
        .init("count", value: "n", help: "Events per batch.", environment: "ENGAGE_COUNT"),
        .init("format", value: "format", help: "Output format."),
    ],
    flags: [.init("direct", help: "Write to the log without the queue.")],
    arguments: [.init("file", help: "File to import.", optional: true)]
)

private let importEvents = Command(
    name: "import",
    abstract: "Import events from a file.",
    arguments: [.init("file", help: "The JSON lines file.")]
)

private let engage = Command(
    name: "engage",
    abstract: "Self-hosted engagement analytics.",
    subcommands: [serve, importEvents]
)

private let serveUsage =
    "engage serve [--listen <address>] [--database <url>] [--count <n>] [--format <format>] [--direct] [<file>]"

private func parse(_ arguments: [String], environment: [String: String] = [:]) throws(UsageError) -> ParsedArguments {
    switch try engage.parse(arguments, environment: environment) {
    case .run(let parsed):
        return parsed
    case .help(let text):
        Issue.record("unexpected help: \(text)")
        return try engage.parse(["import", "x"]).parsedForTest
    }
}

private func usageError(_ arguments: [String], environment: [String: String] = [:]) -> UsageError? {
    do {
        _ = try engage.parse(arguments, environment: environment)
        return nil
    } catch {
        return error
    }
}

private func help(_ arguments: [String]) throws -> String? {
    if case .help(let text) = try engage.parse(arguments, environment: [:]) {
        return text
    }
    return nil
}

extension Command.Invocation {
    fileprivate var parsedForTest: ParsedArguments {
        guard case .run(let parsed) = self else { fatalError("not a run") }
        return parsed
    }
}

@Suite struct CommandLineTests {
    @Test func valuesFlagsAndArguments() throws {
        let args = try parse(["serve", "--listen", "0.0.0.0:9000", "--direct", "--count=50", "events.jsonl"])
        #expect(args.commandPath == ["engage", "serve"])
        #expect(try args.value("listen", default: "unused") == "0.0.0.0:9000")
        #expect(args.flag("direct"))
        #expect(try args.int("count", default: 1000, in: 1...1000) == 50)
        #expect(args.argument("file") == "events.jsonl")
        #expect(args.positionals == ["events.jsonl"])
    }

    @Test func equalsFormKeepsEverythingAfterTheFirstEquals() throws {
        let args = try parse(["serve", "--database=postgres://u@h/db?sslmode=require", "--format="])
        #expect(args.value("database") == "postgres://u@h/db?sslmode=require")
        #expect(args.value("format") == "")
    }

    @Test func lastOccurrenceWinsAndAllAreKept() throws {
        let args = try parse(["serve", "--listen", "a", "--listen=b"])
        #expect(args.value("listen") == "b")
        #expect(args.values("listen") == ["a", "b"])
    }

    @Test func environmentFallback() throws {
        let environment = ["ENGAGE_DATABASE_URL": "postgres://env", "ENGAGE_COUNT": ""]
        let fromEnvironment = try parse(["serve"], environment: environment)
        #expect(try fromEnvironment.required("database") == "postgres://env")
        // An empty variable counts as unset.
        #expect(try fromEnvironment.int("count", default: 1000) == 1000)

        let fromCommandLine = try parse(["serve", "--database", "postgres://flag"], environment: environment)
        #expect(fromCommandLine.value("database") == "postgres://flag")
    }

    @Test func defaults() throws {
        let args = try parse(["serve"])
        #expect(args.value("listen") == "127.0.0.1:8080")
        #expect(try args.value("listen", default: "ignored") == "127.0.0.1:8080")
        #expect(args.value("database") == nil)
        #expect(try args.value("database", default: "postgres://default") == "postgres://default")
        #expect(try args.int("count", default: 1000) == 1000)
        #expect(try args.value("count", default: 2.5) == 2.5)
        #expect(!args.flag("direct"))
        #expect(args.argument("file") == nil)
    }

    @Test func doubleDashEndsOptions() throws {
        let args = try parse(["serve", "--direct", "--", "--not-an-option"])
        #expect(args.flag("direct"))
        #expect(args.argument("file") == "--not-an-option")
    }

    @Test func negativeNumbersAreValues() throws {
        let args = try parse(["serve", "--count", "-5"])
        #expect(throws: UsageError(
            code: .invalidValue,
            message: "invalid value '-5' for option '--count': expected an integer from 1 to 10",
            usage: serveUsage
        )) {
            try args.int("count", default: 1, in: 1...10)
        }
    }

    @Test func unknownOption() {
        let error = usageError(["serve", "--frobnicate", "x"])
        #expect(error == UsageError(code: .unknownOption, message: "unknown option '--frobnicate'", usage: serveUsage))
        #expect(error?.description == "error: unknown option '--frobnicate'\nusage: \(serveUsage)")
        #expect(UsageError.exitCode == 64)

        #expect(usageError(["serve", "-x"]) == UsageError(code: .unknownOption, message: "unknown option '-x'", usage: serveUsage))
        #expect(usageError(["--verbose"]) == UsageError(
            code: .unknownOption, message: "unknown option '--verbose'", usage: "engage <subcommand>"
        ))
    }

    @Test func missingValue() {
        let expected = UsageError(code: .missingValue, message: "missing value for option '--listen'", usage: serveUsage)
        #expect(usageError(["serve", "--listen"]) == expected)
        #expect(usageError(["serve", "--listen", "--direct"]) == expected)
    }

    @Test func requiredValueNamesTheEnvironmentVariable() throws {
        let args = try parse(["serve"])
        #expect(throws: UsageError(
            code: .missingValue,
            message: "missing value for option '--database' (or set ENGAGE_DATABASE_URL)",
            usage: serveUsage
        )) {
            try args.required("database")
        }
    }

    @Test func badIntegers() throws {
        #expect(throws: UsageError(
            code: .invalidValue, message: "invalid value 'abc' for option '--count': expected an integer", usage: serveUsage
        )) {
            try parse(["serve", "--count", "abc"]).int("count", default: 1)
        }
        #expect(throws: UsageError(
            code: .invalidValue,
            message: "invalid value '5000' for option '--count' (from ENGAGE_COUNT): expected an integer from 1 to 1000",
            usage: serveUsage
        )) {
            try parse(["serve"], environment: ["ENGAGE_COUNT": "5000"]).int("count", default: 1, in: 1...1000)
        }
        #expect(throws: UsageError(
            code: .invalidValue, message: "invalid value '1.5' for option '--count': expected an integer", usage: serveUsage
        )) {
            try parse(["serve", "--count", "1.5"]).value("count", default: 0)
        }
    }

    @Test func enumerationValues() throws {
        #expect(try parse(["serve", "--format", "json"]).value("format", default: LogFormat.logfmt) == .json)
        #expect(try parse(["serve"]).value("format", default: LogFormat.logfmt) == .logfmt)
        #expect(throws: UsageError(
            code: .invalidValue, message: "invalid value 'xml' for option '--format': expected one of logfmt, json", usage: serveUsage
        )) {
            try parse(["serve", "--format", "xml"]).value("format", default: LogFormat.logfmt)
        }
    }

    @Test func flagsTakeNoValue() {
        #expect(usageError(["serve", "--direct=yes"]) == UsageError(
            code: .unexpectedValue, message: "flag '--direct' does not take a value", usage: serveUsage
        ))
    }

    @Test func argumentCount() {
        #expect(usageError(["serve", "a", "b"]) == UsageError(
            code: .unexpectedArgument, message: "unexpected argument 'b'", usage: serveUsage
        ))
        #expect(usageError(["import"]) == UsageError(
            code: .missingArgument, message: "missing argument '<file>'", usage: "engage import <file>"
        ))
    }

    @Test func unknownSubcommands() {
        #expect(usageError(["serv"]) == UsageError(
            code: .unknownSubcommand, message: "unknown subcommand 'serv'", usage: "engage <subcommand>"
        ))
        #expect(usageError(["help", "serv"]) == UsageError(
            code: .unknownSubcommand, message: "unknown subcommand 'serv'", usage: "engage <subcommand>"
        ))
    }

    @Test func rootHelp() throws {
        let expected = """
            OVERVIEW: Self-hosted engagement analytics.

            USAGE: engage <subcommand>

            OPTIONS:
              -h, --help  Show help information.

            SUBCOMMANDS:
              serve       Run the ingestion and reporting server.
              import      Import events from a file.

              See 'engage help <subcommand>' for detailed help.
            """
        #expect(try help([]) == expected)
        #expect(try help(["--help"]) == expected)
        #expect(try help(["-h"]) == expected)
        #expect(try help(["help"]) == expected)
    }

    @Test func subcommandHelp() throws {
        let expected = """
            OVERVIEW: Run the ingestion and reporting server.

            USAGE: \(serveUsage)

            ARGUMENTS:
              <file>              File to import.

            OPTIONS:
              --listen <address>  Address to listen on. (default: 127.0.0.1:8080)
              --database <url>    PostgreSQL connection URL. (env: ENGAGE_DATABASE_URL)
              --count <n>         Events per batch. (env: ENGAGE_COUNT)
              --format <format>   Output format.
              --direct            Write to the log without the queue.
              -h, --help          Show help information.
            """
        #expect(try help(["help", "serve"]) == expected)
        #expect(try help(["serve", "--help"]) == expected)
        #expect(try help(["serve", "--bogus", "-h"]) == expected)
        // After `--`, "--help" is an argument.
        #expect(try help(["serve", "--", "--help"]) == nil)
    }
}
