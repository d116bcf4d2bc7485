@testable import Runtime
import Synchronization
import Testing

private enum Serve {
    static let listen = Option("listen", value: "address", help: "Address to listen on.", default: "127.0.0.1:8080")
    static let database = Option<String?>("database", value: "url", help: "PostgreSQL connection URL.", environment: "ENGAGE_DATABASE_URL")
    static let count = Option<Int?>("count", value: "n", help: "Events per batch.", environment: "ENGAGE_COUNT")
    static let format = Option<String?>("format", value: "format", help: "Output format.")
    static let direct = Flag("direct", help: "Write to the log without the queue.")
    static let file = Argument("file", help: "File to import.", optional: true)

    static let command = Command(
        name: "serve",
        abstract: "Run the ingestion and reporting server.",
        options: [listen, database, count, format],
        flags: [direct],
        arguments: [file],
        run: { _ in })
}

private let importFile = Argument("file", help: "The JSON lines file.")
private let importEvents = Command(name: "import", abstract: "Import events from a file.", arguments: [importFile], run: { _ in })

private let engage = Command(
    name: "engage",
    abstract: "Self-hosted engagement analytics.",
    subcommands: [Serve.command, importEvents]
)

private let serveUsage =
    "engage serve [--listen <address>] [--database <url>] [--count <n>] [--format <format>] [--direct] [<file>]"

private func parse(_ arguments: [String], environment: [String: String] = [:], of command: Command = engage) throws(UsageError) -> ParsedArguments {
    switch try command.parse(arguments, environment: environment) {
    case .run(let parsed):
        return parsed
    case .help(let text):
        Issue.record("unexpected help: \(text)")
        throw UsageError(code: .unknownOption, message: "help", usage: "")
    }
}

private func usageError(_ arguments: [String], environment: [String: String] = [:], of command: Command = engage) -> UsageError? {
    do {
        _ = try command.parse(arguments, environment: environment)
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

@Suite struct CommandLineTests {
    @Test func valuesFlagsAndArguments() throws {
        let args = try parse(["serve", "--listen", "0.0.0.0:9000", "--direct", "--count=50", "events.jsonl"])
        #expect(args.commandPath == ["engage", "serve"])
        #expect(args[Serve.listen] == "0.0.0.0:9000")
        #expect(args[Serve.direct])
        #expect(args[Serve.count] == 50)
        #expect(args[Serve.file] == "events.jsonl")
        #expect(args.positionals == ["events.jsonl"])
    }

    @Test func equalsFormKeepsEverythingAfterTheFirstEquals() throws {
        let args = try parse(["serve", "--database=postgres://u@h/db?sslmode=require", "--format="])
        #expect(args[Serve.database] == "postgres://u@h/db?sslmode=require")
        #expect(args[Serve.format] == "")
    }

    @Test func lastOccurrenceWinsAndAllAreKept() throws {
        let args = try parse(["serve", "--format", "a", "--format=b"])
        #expect(args[Serve.format] == "b")
        #expect(args.all(Serve.format) == ["a", "b"])
        #expect(try parse(["serve"]).all(Serve.format).isEmpty)
    }

    @Test func environmentFallback() throws {
        let environment = ["ENGAGE_DATABASE_URL": "postgres://env", "ENGAGE_COUNT": ""]
        let fromEnvironment = try parse(["serve"], environment: environment)
        #expect(try fromEnvironment.required(Serve.database) == "postgres://env")
        // An empty variable counts as unset.
        #expect(fromEnvironment[Serve.count] == nil)

        let fromCommandLine = try parse(["serve", "--database", "postgres://flag"], environment: environment)
        #expect(fromCommandLine[Serve.database] == "postgres://flag")
    }

    @Test func defaults() throws {
        let args = try parse(["serve"])
        #expect(args[Serve.listen] == "127.0.0.1:8080")
        #expect(args[Serve.database] == nil)
        #expect(args[Serve.count] == nil)
        #expect(!args[Serve.direct])
        #expect(args[Serve.file] == nil)
    }

    @Test func doubleDashEndsOptions() throws {
        let args = try parse(["serve", "--direct", "--", "--not-an-option"])
        #expect(args[Serve.direct])
        #expect(args[Serve.file] == "--not-an-option")
    }

    @Test func negativeNumbersAreValues() throws {
        #expect(try parse(["serve", "--count", "-5"])[Serve.count] == -5)
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

    /// An option given before the subcommand, where it is unknown, or a connection string given
    /// without its option: the message named the whole token, password included.
    @Test func aRefusedTokenIsNamedWithoutItsSecret() {
        let url = "postgres://engage:s3cret@db.example/engage"
        let beforeSubcommand = usageError(["--database=\(url)", "serve"])
        #expect(beforeSubcommand?.message == "unknown option '--database'")
        #expect(usageError(["serve", "-d=\(url)"])?.message == "unknown option '-d'")
        let stray = usageError(["serve", "a", url])
        #expect(stray?.message == "unexpected argument 'postgres://…@db.example/engage'")
        #expect(usageError(["serve", "a", "host=db password=s3cret"])?.message == "unexpected argument 'host=db password=…'")
        #expect(usageError(["serve", "a", "host=db password = s3cret"])?.message == "unexpected argument 'host=db password =…'")
        // A "password" that is a value comes before the one that names the secret.
        #expect(usageError(["serve", "a", "user=password password=s3cret"])?.message == "unexpected argument 'user=password password=…'")
        #expect(usageError(["serve", "a", "postgresql://h/x?user=password&password=s3cret"])?.message
            == "unexpected argument 'postgresql://h/x?user=password&password=…'")
        // Where a subcommand is expected, and after help.
        let asSubcommand = usageError([url + "?sslmode=require", "serve"])
        #expect(asSubcommand?.message == "unknown subcommand 'postgres://…@db.example/engage?sslmode=require'")
        let afterHelp = usageError(["help", url])
        for error in [beforeSubcommand, stray, asSubcommand, afterHelp] { #expect(!(error?.description.contains("s3cret") ?? true)) }
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
            try args.required(Serve.database)
        }
        #expect(throws: UsageError(code: .missingValue, message: "missing value for option '--format'", usage: serveUsage)) {
            try args.required(Serve.format)
        }
    }

    @Test func badIntegers() {
        #expect(usageError(["serve", "--count", "abc"]) == UsageError(
            code: .invalidValue, message: "invalid value 'abc' for option '--count': expected an integer", usage: serveUsage
        ))
        #expect(usageError(["serve", "--count", "1.5"]) == UsageError(
            code: .invalidValue, message: "invalid value '1.5' for option '--count': expected an integer", usage: serveUsage
        ))
        #expect(usageError(["serve"], environment: ["ENGAGE_COUNT": "many"]) == UsageError(
            code: .invalidValue, message: "invalid value 'many' for option '--count' (from ENGAGE_COUNT): expected an integer", usage: serveUsage
        ))
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
        // As an option's value, "-h" is that value (it showed help and exited 0, doing nothing).
        #expect(try help(["serve", "--format", "-h"]) == nil)
        #expect(try parse(["serve", "--format", "-h"])[Serve.format] == "-h")
        #expect(try help(["serve", "--format=-h", "-h"]) == expected)
        #expect(try help(["serve", "--direct", "-h"]) == expected)
    }
}

/// Typed declarations: the default, the environment variable and the validation of an option
/// live in its declaration, and the value is read through it.
@Suite struct OptionDeclarationTests {
    enum Loop: String, CaseIterable, OptionValue { case poll, epoll }

    static let threads = Option("threads", value: "n", help: "Threads.", environment: "TEST_THREADS", default: 2, validate: .range(1...64))
    static let loop = Option("loop", value: "poll|epoll", help: "How threads wait.", environment: "TEST_LOOP", default: Loop.poll)
    static let share = Option("share", value: "fraction", help: "A share.", default: 0.25,
                              validate: Validation("expected a fraction from 0 to 1") { (0...1).contains($0) })
    static let seconds = Option("seconds", value: "s", help: "Seconds.", default: 10.0)
    static let key = Option<String?>("key", value: "key", help: "A secret.", environment: "TEST_KEY", secret: true,
                                     validate: Validation("expected a key without spaces") { !$0.contains(" ") })
    static let sizes = Option<[Int]>("sizes", value: "list", help: "Sizes.", default: [1, 2], defaultText: "1,2",
                                     requirement: "expected positive integers separated by commas",
                                     parse: { text in
                                         let sizes = text.split(separator: ",").compactMap { Int($0) }
                                         return sizes.allSatisfy { $0 > 0 } && !sizes.isEmpty ? sizes : nil
                                     })

    static let run = Command(name: "run", abstract: "Runs.", options: [threads, loop, share, seconds, key, sizes], run: { _ in })
    static let tool = Command(name: "tool", abstract: "A tool.", subcommands: [
        Command(name: "group", abstract: "A group.", subcommands: [run]),
    ])
    static let usage = "tool group run [--threads <n>] [--loop <poll|epoll>] [--share <fraction>] [--seconds <s>] [--key <key>] [--sizes <list>]"

    func parsed(_ arguments: [String], environment: [String: String] = [:]) throws(UsageError) -> ParsedArguments {
        try parse(["group", "run"] + arguments, environment: environment, of: Self.tool)
    }

    func refusal(_ arguments: [String], environment: [String: String] = [:]) -> String? {
        usageError(["group", "run"] + arguments, environment: environment, of: Self.tool)?.message
    }

    @Test func defaultsAreTypedValues() throws {
        let arguments = try parsed([])
        #expect(arguments[Self.threads] == 2)
        #expect(arguments[Self.loop] == .poll)
        #expect(arguments[Self.share] == 0.25)
        #expect(arguments[Self.key] == nil)
        #expect(arguments[Self.sizes] == [1, 2])
        #expect(arguments.commandPath == ["tool", "group", "run"])
    }

    @Test func helpShowsDefaultsAsTheyAreWritten() {
        #expect(Self.run.helpText(path: ["tool", "group", "run"]) == """
            OVERVIEW: Runs.

            USAGE: \(Self.usage)

            OPTIONS:
              --threads <n>        Threads. (default: 2) (env: TEST_THREADS)
              --loop <poll|epoll>  How threads wait. (default: poll) (env: TEST_LOOP)
              --share <fraction>   A share. (default: 0.25)
              --seconds <s>        Seconds. (default: 10)
              --key <key>          A secret. (env: TEST_KEY)
              --sizes <list>       Sizes. (default: 1,2)
              -h, --help           Show help information.
            """)
    }

    @Test func theEnvironmentOverridesTheDefaultAndTheCommandLineOverridesBoth() throws {
        let environment = ["TEST_THREADS": "8", "TEST_LOOP": "epoll", "TEST_KEY": "k-1"]
        let fromEnvironment = try parsed([], environment: environment)
        #expect(fromEnvironment[Self.threads] == 8)
        #expect(fromEnvironment[Self.loop] == .epoll)
        #expect(try fromEnvironment.required(Self.key) == "k-1")
        let given = try parsed(["--threads", "16", "--loop=poll"], environment: environment)
        #expect(given[Self.threads] == 16)
        #expect(given[Self.loop] == .poll)
    }

    @Test func refusedValuesNameTheOptionAndWhereTheValueCameFrom() {
        #expect(refusal(["--threads", "0"]) == "invalid value '0' for option '--threads': expected an integer from 1 to 64")
        #expect(refusal(["--threads", "two"]) == "invalid value 'two' for option '--threads': expected an integer from 1 to 64")
        #expect(refusal([], environment: ["TEST_THREADS": "65"])
                == "invalid value '65' for option '--threads' (from TEST_THREADS): expected an integer from 1 to 64")
        #expect(refusal(["--loop", "kqueue"]) == "invalid value 'kqueue' for option '--loop': expected one of poll, epoll")
        #expect(refusal(["--share", "1.5"]) == "invalid value '1.5' for option '--share': expected a fraction from 0 to 1")
        #expect(refusal(["--seconds", "soon"]) == "invalid value 'soon' for option '--seconds': expected a number")
        #expect(refusal(["--sizes", "3,-1"]) == "invalid value '3,-1' for option '--sizes': expected positive integers separated by commas")
        // Every value is checked when parsing, even one given before a valid later occurrence.
        #expect(refusal(["--threads", "0", "--threads", "4"]) == "invalid value '0' for option '--threads': expected an integer from 1 to 64")
    }

    @Test func aRefusedSecretIsNotRepeated() {
        #expect(refusal(["--key", "two words"]) == "invalid value for option '--key': expected a key without spaces")
        #expect(refusal([], environment: ["TEST_KEY": "two words"])
                == "invalid value for option '--key' (from TEST_KEY): expected a key without spaces")
    }

    @Test func errorsCarryTheSynopsisOfTheCommandThatWasParsed() throws {
        #expect(usageError(["group", "run", "--threads", "0"], of: Self.tool)?.usage == Self.usage)
        let arguments = try parsed([])
        #expect(arguments.usageError(.invalidValue, "two options disagree")
                == UsageError(code: .invalidValue, message: "two options disagree", usage: Self.usage))
        #expect(throws: UsageError(code: .missingValue, message: "missing value for option '--key' (or set TEST_KEY)", usage: Self.usage)) {
            try arguments.required(Self.key)
        }
    }

    @Test func nestedSubcommandsAreFoundInTheirTable() {
        #expect(usageError(["group", "walk"], of: Self.tool)
                == UsageError(code: .unknownSubcommand, message: "unknown subcommand 'walk'", usage: "tool group <subcommand>"))
        #expect(usageError(["help", "group", "walk"], of: Self.tool)
                == UsageError(code: .unknownSubcommand, message: "unknown subcommand 'walk'", usage: "tool group <subcommand>"))
        #expect(usageError(["group", "--threads", "2"], of: Self.tool)
                == UsageError(code: .unknownOption, message: "unknown option '--threads'", usage: "tool group <subcommand>"))
    }

    @Test func theParsedCommandRunsItsOwnAction() async throws {
        let ran = RanCommands()
        let tool = Command(name: "tool", abstract: "A tool.", subcommands: [
            Command(name: "a", abstract: "A.", run: { _ in ran.record("a") }),
            Command(name: "b", abstract: "B.", subcommands: [
                Command(name: "c", abstract: "C.", options: [Self.threads], run: { ran.record("b c \($0[Self.threads])") }),
            ]),
        ])
        try await parse(["b", "c", "--threads", "3"], of: tool).run()
        try await parse(["a"], of: tool).run()
        #expect(ran.names == ["b c 3", "a"])
    }
}

private final class RanCommands: Sendable {
    private let storage = Mutex<[String]>([])
    var names: [String] { storage.withLock { $0 } }
    func record(_ name: String) { storage.withLock { $0.append(name) } }
}

