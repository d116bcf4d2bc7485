// A small command-line parser in the spirit of swift-argument-parser, written for engage.
//
// A `Command` is either a group of subcommands or a leaf that declares its options, flags and
// arguments and the action that runs it. `parse` turns the process arguments into help text or
// `ParsedArguments`, whose options are already checked and typed; the action reads them through
// their declarations:
//
//     static let count = Option("count", value: "n", help: "Events per batch.", default: 1000, validate: .range(1...100_000))
//     static let definition = Command(name: "send", abstract: "Send events.", options: [count]) { arguments in
//         let count = arguments[count]
//         ...
//     }
//
// Problems the user can fix are `UsageError`s; the executable prints them as
// "error: ...\nusage: ..." on stderr and exits with `UsageError.exitCode` (64):
//
//     do {
//         switch try engage.parse(Array(CommandLine.arguments.dropFirst())) {
//         case .help(let text): print(text)
//         case .run(let arguments): try await arguments.run()
//         }
//     } catch let error as UsageError {
//         FileHandle.standardError.write(Data((error.description + "\n").utf8))
//         exit(UsageError.exitCode)
//     }

import Foundation

/// What a command or subcommand accepts, what runs it, and the text its help shows.
public struct Command: Sendable {
    public typealias Action = @Sendable (ParsedArguments) async throws -> Void

    public let name: String
    public let abstract: String
    public let options: [any CommandOption]
    public let flags: [Flag]
    public let arguments: [Argument]
    /// The commands a group dispatches to; empty for a leaf.
    public let subcommands: [Command]
    let action: Action?

    /// A leaf command: its options, flags and positional arguments, and what it does.
    public init(name: String, abstract: String, options: [any CommandOption] = [], flags: [Flag] = [],
                arguments: [Argument] = [], run action: @escaping Action) {
        precondition(arguments.dropLast().allSatisfy { !$0.isVariadic }, "\(name): only the last argument takes the remaining ones")
        self.name = name
        self.abstract = abstract
        self.options = options
        self.flags = flags
        self.arguments = arguments
        self.subcommands = []
        self.action = action
    }

    /// A group: it only dispatches to its subcommands and takes no options or arguments.
    public init(name: String, abstract: String, subcommands: [Command]) {
        self.name = name
        self.abstract = abstract
        self.options = []
        self.flags = []
        self.arguments = []
        self.subcommands = subcommands
        self.action = nil
    }

    /// The outcome of parsing: text to print (exit 0) or a leaf command to run.
    public enum Invocation: Sendable {
        case help(String)
        case run(ParsedArguments)
    }

    /// Parses the arguments that follow the program name.
    ///
    /// `--help`/`-h` anywhere before `--` and `help SUBCOMMAND...` return help; a group given no
    /// subcommand returns its help as well.
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
                    guard let sub = command.subcommand(name) else {
                        throw command.usageError(.unknownSubcommand, "unknown subcommand '\(Self.shown(name))'", path: helpPath)
                    }
                    command = sub
                    helpPath.append(name)
                }
                return .help(command.helpText(path: helpPath))
            }
            guard let sub = subcommand(first) else {
                let problem: UsageError.Code = first.hasPrefix("-") ? .unknownOption : .unknownSubcommand
                let noun = first.hasPrefix("-") ? "option" : "subcommand"
                throw usageError(problem, "unknown \(noun) '\(first.hasPrefix("-") ? Self.named(first) : Self.shown(first))'", path: path)
            }
            return try sub.parse(tokens.dropFirst(), path: path + [first], environment: environment)
        }

        if asksForHelp(tokens) {
            return .help(helpText(path: path))
        }

        var given: [String: [String]] = [:]
        var flagsGiven: Set<String> = []
        var positionals: [String] = []
        var index = tokens.startIndex
        var onlyPositionals = false
        while index < tokens.endIndex {
            let token = tokens[index]
            index += 1
            if onlyPositionals {
                positionals.append(token)
            } else if token == "--" {
                onlyPositionals = true
            } else if token.hasPrefix("--") {
                let body = token.dropFirst(2)
                let name = String(body.prefix { $0 != "=" })
                let inlineValue = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
                if options.contains(where: { $0.name == name }) {
                    if let inlineValue {
                        given[name, default: []].append(inlineValue)
                    } else if index < tokens.endIndex, !tokens[index].hasPrefix("--") {
                        given[name, default: []].append(tokens[index])
                        index += 1
                    } else {
                        throw usageError(.missingValue, "missing value for option '--\(name)'", path: path)
                    }
                } else if flags.contains(where: { $0.name == name }) {
                    guard inlineValue == nil else {
                        throw usageError(.unexpectedValue, "flag '--\(name)' does not take a value", path: path)
                    }
                    flagsGiven.insert(name)
                } else {
                    throw usageError(.unknownOption, "unknown option '--\(name)'", path: path)
                }
            } else if token.hasPrefix("-"), token.count > 1, Double(token) == nil {
                throw usageError(.unknownOption, "unknown option '\(Self.named(token))'", path: path)
            } else {
                positionals.append(token)
            }
        }

        if positionals.count > arguments.count, arguments.last?.isVariadic != true {
            throw usageError(.unexpectedArgument, "unexpected argument '\(Self.shown(positionals[arguments.count]))'", path: path)
        }
        for argument in arguments[min(positionals.count, arguments.count)...] where !argument.isOptional {
            throw usageError(.missingArgument, "missing argument '<\(argument.name)>'", path: path)
        }
        // Every value is checked now, before the command does anything.
        let usage = usage(path: path)
        var resolved: [String: ResolvedOption] = [:]
        for option in options {
            resolved[option.name] = try option.resolve(given: given[option.name] ?? [], environment: environment, usage: usage)
        }
        return .run(ParsedArguments(command: self, commandPath: path, usage: usage, options: resolved,
                                    flags: flagsGiven, positionals: positionals))
    }

    /// Whether `--help` or `-h` stands where an option or an argument would, before any `--`:
    /// as an option's value (`--name -h`) it is that value, as the parse below reads it.
    private func asksForHelp(_ tokens: ArraySlice<String>) -> Bool {
        var index = tokens.startIndex
        while index < tokens.endIndex, tokens[index] != "--" {
            let token = tokens[index]
            index += 1
            if token == "--help" || token == "-h" { return true }
            if token.hasPrefix("--"), !token.contains("="), options.contains(where: { $0.name == token.dropFirst(2) }),
               index < tokens.endIndex, !tokens[index].hasPrefix("--") {
                index += 1
            }
        }
        return false
    }

    private func subcommand(_ name: String) -> Command? {
        subcommands.first { $0.name == name }
    }

    /// The one-line synopsis, e.g. `engage serve [--listen <address>] [--direct] <file>`.
    public func usage(path: [String]) -> String {
        var parts = path
        if !subcommands.isEmpty {
            parts.append("<subcommand>")
        }
        parts += options.map { "[--\($0.name) <\($0.valueName)>]" }
        parts += flags.map { "[--\($0.name)]" }
        parts += arguments.map { $0.isVariadic ? "[-- <\($0.name)>...]" : $0.isOptional ? "[<\($0.name)>]" : "<\($0.name)>" }
        return parts.joined(separator: " ")
    }

    /// The text for `--help`, with the help of every entry aligned in one column.
    public func helpText(path: [String]) -> String {
        var sections: [(title: String, rows: [(String, String)])] = []
        if !arguments.isEmpty {
            sections.append(("ARGUMENTS", arguments.map { ("<\($0.name)>" + ($0.isVariadic ? "..." : ""), $0.help) }))
        }
        var optionRows = options.map { option in
            var help = option.help
            if let defaultText = option.defaultText { help += " (default: \(defaultText))" }
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

    private func usageError(_ code: UsageError.Code, _ message: String, path: [String]) -> UsageError {
        UsageError(code: code, message: message, usage: usage(path: path))
    }
}
