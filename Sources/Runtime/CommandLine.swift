// A small command-line parser in the spirit of swift-argument-parser, written for engage.
//
// A `Command` describes what a (sub)command accepts; `parse` turns the process arguments into
// either help text or `ParsedArguments`, from which the subcommand reads typed values:
//
//     let listen = try args.value("listen", default: "127.0.0.1:8080")
//     let count = try args.int("count", default: 1000, in: 1...1_000_000)
//     let direct = args.flag("direct")
//
// Problems the user can fix are `UsageError`s; the executable prints them as
// "error: ...\nusage: ..." on stderr and exits with `UsageError.exitCode` (64):
//
//     do {
//         switch try engage.parse(Array(CommandLine.arguments.dropFirst())) {
//         case .help(let text): print(text)
//         case .run(let args): try await run(args)   // dispatch on args.commandPath
//         }
//     } catch let error as UsageError {
//         FileHandle.standardError.write(Data((error.description + "\n").utf8))
//         exit(UsageError.exitCode)
//     }

import Foundation

/// What a command or subcommand accepts, and the text its help shows.
public struct Command: Sendable {
    /// `--name <value>`, falling back to an environment variable and then a default.
    public struct Option: Sendable {
        public var name: String
        public var valueName: String
        public var help: String
        public var environment: String?
        public var defaultValue: String?

        public init(_ name: String, value valueName: String = "value", help: String, environment: String? = nil, default defaultValue: String? = nil) {
            self.name = name
            self.valueName = valueName
            self.help = help
            self.environment = environment
            self.defaultValue = defaultValue
        }
    }

    /// `--name`, true when present.
    public struct Flag: Sendable {
        public var name: String
        public var help: String

        public init(_ name: String, help: String) {
            self.name = name
            self.help = help
        }
    }

    /// A positional argument, in declaration order.
    public struct Argument: Sendable {
        public var name: String
        public var help: String
        public var isOptional: Bool

        public init(_ name: String, help: String, optional isOptional: Bool = false) {
            self.name = name
            self.help = help
            self.isOptional = isOptional
        }
    }

    public var name: String
    public var abstract: String
    public var options: [Option]
    public var flags: [Flag]
    public var arguments: [Argument]
    /// A command with subcommands only dispatches to them; it takes no options or arguments.
    public var subcommands: [Command]

    public init(
        name: String, abstract: String, options: [Option] = [], flags: [Flag] = [],
        arguments: [Argument] = [], subcommands: [Command] = []
    ) {
        precondition(subcommands.isEmpty || (options.isEmpty && flags.isEmpty && arguments.isEmpty),
                     "command \(name): a command with subcommands takes no options, flags or arguments")
        self.name = name
        self.abstract = abstract
        self.options = options
        self.flags = flags
        self.arguments = arguments
        self.subcommands = subcommands
    }

    /// The outcome of parsing: text to print (exit 0) or a subcommand to run.
    public enum Invocation: Sendable {
        case help(String)
        case run(ParsedArguments)
    }

    /// Parses the arguments that follow the program name.
    ///
    /// `--help`/`-h` anywhere before `--` and `help SUBCOMMAND...` return help; a command with
    /// subcommands given none returns its help as well.
    public func parse(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws(UsageError) -> Invocation {
        try parse(arguments[...], path: [name], environment: environment)
    }

    private func parse(_ tokens: ArraySlice<String>, path: [String], environment: [String: String]) throws(UsageError) -> Invocation {
        if !subcommands.isEmpty {
            guard let first = tokens.first, first != "--help", first != "-h" else {
                return .help(helpText(path: path))
            }
            if first == "help" {
                var command = self
                var helpPath = path
                for name in tokens.dropFirst() {
                    guard let sub = command.subcommands.first(where: { $0.name == name }) else {
                        throw command.usageError(.unknownSubcommand, "unknown subcommand '\(name)'", path: helpPath)
                    }
                    command = sub
                    helpPath.append(name)
                }
                return .help(command.helpText(path: helpPath))
            }
            guard let sub = subcommands.first(where: { $0.name == first }) else {
                let problem: UsageError.Code = first.hasPrefix("-") ? .unknownOption : .unknownSubcommand
                let noun = first.hasPrefix("-") ? "option" : "subcommand"
                throw usageError(problem, "unknown \(noun) '\(first)'", path: path)
            }
            return try sub.parse(tokens.dropFirst(), path: path + [first], environment: environment)
        }

        let options = tokens.prefix { $0 != "--" }
        if options.contains("--help") || options.contains("-h") {
            return .help(helpText(path: path))
        }

        var parsed = ParsedArguments(command: self, commandPath: path, usage: usage(path: path), environment: environment)
        var index = tokens.startIndex
        var onlyPositionals = false
        while index < tokens.endIndex {
            let token = tokens[index]
            index += 1
            if onlyPositionals {
                parsed.positionals.append(token)
            } else if token == "--" {
                onlyPositionals = true
            } else if token.hasPrefix("--") {
                let body = token.dropFirst(2)
                let name = String(body.prefix { $0 != "=" })
                let inlineValue = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
                if self.options.contains(where: { $0.name == name }) {
                    if let inlineValue {
                        parsed.values[name, default: []].append(inlineValue)
                    } else if index < tokens.endIndex, !tokens[index].hasPrefix("--") {
                        parsed.values[name, default: []].append(tokens[index])
                        index += 1
                    } else {
                        throw usageError(.missingValue, "missing value for option '--\(name)'", path: path)
                    }
                } else if flags.contains(where: { $0.name == name }) {
                    guard inlineValue == nil else {
                        throw usageError(.unexpectedValue, "flag '--\(name)' does not take a value", path: path)
                    }
                    parsed.flags.insert(name)
                } else {
                    throw usageError(.unknownOption, "unknown option '--\(name)'", path: path)
                }
            } else if token.hasPrefix("-"), token.count > 1, Double(token) == nil {
                throw usageError(.unknownOption, "unknown option '\(token)'", path: path)
            } else {
                parsed.positionals.append(token)
            }
        }

        if parsed.positionals.count > arguments.count {
            throw usageError(.unexpectedArgument, "unexpected argument '\(parsed.positionals[arguments.count])'", path: path)
        }
        for argument in arguments[parsed.positionals.count...] where !argument.isOptional {
            throw usageError(.missingArgument, "missing argument '<\(argument.name)>'", path: path)
        }
        return .run(parsed)
    }

    /// The one-line synopsis, e.g. `engage serve [--listen <address>] [--direct] <file>`.
    public func usage(path: [String]) -> String {
        var parts = path
        if !subcommands.isEmpty {
            parts.append("<subcommand>")
        }
        parts += options.map { "[--\($0.name) <\($0.valueName)>]" }
        parts += flags.map { "[--\($0.name)]" }
        parts += arguments.map { $0.isOptional ? "[<\($0.name)>]" : "<\($0.name)>" }
        return parts.joined(separator: " ")
    }

    /// The text for `--help`, with the help of every entry aligned in one column.
    public func helpText(path: [String]) -> String {
        var sections: [(title: String, rows: [(String, String)])] = []
        if !arguments.isEmpty {
            sections.append(("ARGUMENTS", arguments.map { ("<\($0.name)>", $0.help) }))
        }
        var optionRows = options.map { option in
            var help = option.help
            if let defaultValue = option.defaultValue { help += " (default: \(defaultValue))" }
            if let environment = option.environment { help += " (env: \(environment))" }
            return ("--\(option.name) <\(option.valueName)>", help)
        }
        optionRows += flags.map { ("--\($0.name)", $0.help) }
        optionRows.append(("-h, --help", "Show help information."))
        sections.append(("OPTIONS", optionRows))
        if !subcommands.isEmpty {
            sections.append(("SUBCOMMANDS", subcommands.map { ($0.name, $0.abstract) }))
        }

        let width = sections.flatMap(\.rows).map(\.0.count).max() ?? 0
        var lines = ["OVERVIEW: \(abstract)", "", "USAGE: \(usage(path: path))"]
        for section in sections {
            lines += ["", "\(section.title):"]
            for (label, help) in section.rows {
                lines.append("  " + label + String(repeating: " ", count: width - label.count) + "  " + help)
            }
        }
        if !subcommands.isEmpty {
            lines += ["", "  See '\(path.joined(separator: " ")) help <subcommand>' for detailed help."]
        }
        return lines.joined(separator: "\n")
    }

    fileprivate func usageError(_ code: UsageError.Code, _ message: String, path: [String]) -> UsageError {
        UsageError(code: code, message: message, usage: usage(path: path))
    }
}

/// A problem with the command line that the user can fix.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    /// The exit status for usage errors (`EX_USAGE` from sysexits.h).
    public static let exitCode: Int32 = 64

    public enum Code: String, Sendable {
        case unknownOption, unknownSubcommand, missingValue, unexpectedValue, invalidValue
        case missingArgument, unexpectedArgument
    }

    public let code: Code
    /// What is wrong, naming the option or argument, e.g. `unknown option '--frobnicate'`.
    public let message: String
    /// The synopsis of the command that was being parsed.
    public let usage: String

    public init(code: Code, message: String, usage: String) {
        self.code = code
        self.message = message
        self.usage = usage
    }

    /// The text to print on stderr: `error: MESSAGE` and `usage: USAGE` lines.
    public var description: String {
        "error: \(message)\nusage: \(usage)"
    }
}

/// The values given to one subcommand.
///
/// An option's value comes from the command line (the last occurrence wins), then its
/// environment variable when set and not empty, then its declared default, then the `default:`
/// passed when reading. Reading a name the command does not declare is a programming error.
public struct ParsedArguments: Sendable {
    public let command: Command
    /// The command names from the program down, e.g. `["engage", "serve"]`.
    public let commandPath: [String]
    let usage: String
    let environment: [String: String]
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    /// The positional arguments, in order.
    public internal(set) var positionals: [String] = []

    init(command: Command, commandPath: [String], usage: String, environment: [String: String]) {
        self.command = command
        self.commandPath = commandPath
        self.usage = usage
        self.environment = environment
    }

    /// The option's value, or nil if it was not given and has no environment value or default.
    public func value(_ name: String) -> String? {
        lookup(name)?.value
    }

    /// Every value given for the option on the command line, in order.
    public func values(_ name: String) -> [String] {
        _ = declaration(name)
        return values[name] ?? []
    }

    /// The option's value, or a usage error naming the option (and its environment variable).
    public func required(_ name: String) throws(UsageError) -> String {
        if let found = lookup(name) { return found.value }
        var message = "missing value for option '--\(name)'"
        if let environment = declaration(name).environment {
            message += " (or set \(environment))"
        }
        throw UsageError(code: .missingValue, message: message, usage: usage)
    }

    /// The option's value converted to `T` (String, Int, Double, ...), or `defaultValue`.
    public func value<T: LosslessStringConvertible>(_ name: String, default defaultValue: T) throws(UsageError) -> T {
        guard let found = lookup(name) else { return defaultValue }
        guard let converted = T(found.value) else {
            throw invalid(name, found, expected: Self.describe(T.self))
        }
        return converted
    }

    /// The option's value as one of an enumeration's raw values, e.g. `--format json|csv`.
    public func value<T: RawRepresentable & CaseIterable>(_ name: String, default defaultValue: T) throws(UsageError) -> T where T.RawValue == String {
        guard let found = lookup(name) else { return defaultValue }
        guard let converted = T(rawValue: found.value) else {
            let choices = T.allCases.map(\.rawValue).joined(separator: ", ")
            throw invalid(name, found, expected: "one of \(choices)")
        }
        return converted
    }

    /// The option's value as an integer, checked against `range` when one is given.
    public func int(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>? = nil) throws(UsageError) -> Int {
        guard let found = lookup(name) else { return defaultValue }
        let expected = range.map { "an integer from \($0.lowerBound) to \($0.upperBound)" } ?? "an integer"
        guard let number = Int(found.value), range?.contains(number) ?? true else {
            throw invalid(name, found, expected: expected)
        }
        return number
    }

    /// Whether the flag was given.
    public func flag(_ name: String) -> Bool {
        precondition(command.flags.contains { $0.name == name }, "\(commandPath.joined(separator: " ")) declares no flag --\(name)")
        return flags.contains(name)
    }

    /// The positional argument with this declared name, or nil if an optional one was left out.
    public func argument(_ name: String) -> String? {
        guard let index = command.arguments.firstIndex(where: { $0.name == name }) else {
            preconditionFailure("\(commandPath.joined(separator: " ")) declares no argument <\(name)>")
        }
        return index < positionals.count ? positionals[index] : nil
    }

    private struct Found {
        var value: String
        /// The environment variable the value came from, if it did.
        var environment: String?
    }

    private func declaration(_ name: String) -> Command.Option {
        guard let option = command.options.first(where: { $0.name == name }) else {
            preconditionFailure("\(commandPath.joined(separator: " ")) declares no option --\(name)")
        }
        return option
    }

    private func lookup(_ name: String) -> Found? {
        let option = declaration(name)
        if let given = values[name]?.last {
            return Found(value: given)
        }
        if let variable = option.environment, let value = environment[variable], !value.isEmpty {
            return Found(value: value, environment: variable)
        }
        return option.defaultValue.map { Found(value: $0) }
    }

    private func invalid(_ name: String, _ found: Found, expected: String) -> UsageError {
        let source = found.environment.map { " (from \($0))" } ?? ""
        return UsageError(
            code: .invalidValue,
            message: "invalid value '\(found.value)' for option '--\(name)'\(source): expected \(expected)",
            usage: usage
        )
    }

    private static func describe<T>(_ type: T.Type) -> String {
        switch type {
        case is any BinaryInteger.Type: "an integer"
        case is any BinaryFloatingPoint.Type: "a number"
        case is Bool.Type: "true or false"
        default: "a value of type \(type)"
        }
    }
}
