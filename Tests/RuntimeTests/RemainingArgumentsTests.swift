@testable import Runtime
import Testing

private enum Psql {
    static let database = Option<String?>("database", value: "url", help: "PostgreSQL connection URL.")
    static let passed = Argument.remaining("psql-argument", help: "Passed to psql.")
    static let command = Command(name: "psql", abstract: "Run psql.", options: [database], arguments: [passed], run: { _ in })
    static let group = Command(name: "db", abstract: "The database.", subcommands: [command])
}

/// `Argument.remaining`: what follows `--` (and plain words) is passed on untouched.
@Suite struct RemainingArgumentsTests {
    static func parse(_ arguments: [String]) throws -> ParsedArguments {
        guard case .run(let parsed) = try Psql.group.parse(arguments, environment: [:]) else {
            throw UsageError(code: .unknownOption, message: "help instead of a command", usage: "")
        }
        return parsed
    }

    @Test func everythingAfterTheDoubleDashIsPassedOnInOrder() throws {
        let parsed = try Self.parse(["psql", "--database", "postgres://x/y", "--", "-c", "select 1", "--help", "-At"])
        #expect(parsed.all(Psql.passed) == ["-c", "select 1", "--help", "-At"])
        #expect(parsed[Psql.database] == "postgres://x/y")
        #expect(try Self.parse(["psql"]).all(Psql.passed) == [])
        #expect(try Self.parse(["psql", "dbname", "user"]).all(Psql.passed) == ["dbname", "user"])
    }

    @Test func beforeTheDoubleDashOptionsAreStillChecked() {
        #expect(throws: UsageError(code: .unknownOption, message: "unknown option '-c'", usage: "db psql [--database <url>] [-- <psql-argument>...]")) {
            try Self.parse(["psql", "-c", "select 1"])
        }
    }

    @Test func usageAndHelpShowTheRemainingArguments() throws {
        #expect(Psql.command.usage(path: ["db", "psql"]) == "db psql [--database <url>] [-- <psql-argument>...]")
        let help = Psql.command.helpText(path: ["db", "psql"])
        #expect(help.contains("  <psql-argument>...  Passed to psql."), "\(help)")
    }
}
