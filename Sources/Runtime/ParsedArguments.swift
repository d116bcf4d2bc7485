/// What a leaf command was given, checked and typed when the command line was parsed; read
/// through the declarations: `arguments[Self.threads]`, `arguments[Self.direct]`,
/// `arguments[Self.file]`.
///
/// Reading an option, flag or argument the command does not declare is a programming error.
public struct ParsedArguments: Sendable {
    public let command: Command
    /// The command names from the program down, e.g. `["engage", "serve"]`.
    public let commandPath: [String]
    /// The command's synopsis, which usage errors repeat.
    public let usage: String
    let options: [String: ResolvedOption]
    let flags: Set<String>
    /// The positional arguments, in order.
    public let positionals: [String]

    /// Runs the command's action.
    public func run() async throws {
        try await command.action?(self)
    }

    /// The option's value: given, from its environment variable, or its default.
    public subscript<Value>(option: Option<Value>) -> Value {
        guard let value = options[option.name]?.value as? Value else {
            preconditionFailure("\(commandPath.joined(separator: " ")) declares no option \(option.longName) of type \(Value.self)")
        }
        return value
    }

    /// The value of an option without a default, or a usage error naming it (and its variable).
    public func required<Wrapped>(_ option: Option<Wrapped?>) throws(UsageError) -> Wrapped {
        if let value = self[option] { return value }
        var message = "missing value for option '\(option.longName)'"
        if let environment = option.environment {
            message += " (or set \(environment))"
        }
        throw usageError(.missingValue, message)
    }

    /// Every value given for the option on the command line, in order.
    public func all<Wrapped>(_ option: Option<Wrapped?>) -> [Wrapped] {
        guard let resolved = options[option.name] else {
            preconditionFailure("\(commandPath.joined(separator: " ")) declares no option \(option.longName)")
        }
        return resolved.given.compactMap { $0 as? Wrapped }
    }

    /// Whether the flag was given.
    public subscript(flag: Flag) -> Bool {
        precondition(command.flags.contains { $0.name == flag.name }, "\(commandPath.joined(separator: " ")) declares no flag --\(flag.name)")
        return flags.contains(flag.name)
    }

    /// The positional argument, or nil if an optional one was left out.
    public subscript(argument: Argument) -> String? {
        guard let index = command.arguments.firstIndex(where: { $0.name == argument.name }) else {
            preconditionFailure("\(commandPath.joined(separator: " ")) declares no argument <\(argument.name)>")
        }
        return index < positionals.count ? positionals[index] : nil
    }

    /// Every value of an argument declared with ``Argument/remaining(_:help:)``, in order.
    public func all(_ argument: Argument) -> [String] {
        guard let index = command.arguments.firstIndex(where: { $0.name == argument.name }), argument.isVariadic else {
            preconditionFailure("\(commandPath.joined(separator: " ")) declares no remaining arguments <\(argument.name)>")
        }
        return Array(positionals.dropFirst(index))
    }

    /// A positional argument that is not optional (the parser has already refused its absence).
    public func required(_ argument: Argument) throws(UsageError) -> String {
        guard let value = self[argument] else { throw usageError(.missingArgument, "missing argument '<\(argument.name)>'") }
        return value
    }

    /// A usage error of this command, with its synopsis: for problems a declaration cannot see
    /// alone (two options together, a file that cannot be read).
    public func usageError(_ code: UsageError.Code, _ message: String) -> UsageError {
        UsageError(code: code, message: message, usage: usage)
    }
}
