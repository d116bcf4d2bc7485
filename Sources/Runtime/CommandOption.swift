/// `--name <value>`: declared once, with its type, default, environment variable and validation,
/// and read through the same declaration:
///
///     static let threads = Option("http-threads", value: "n", help: "HTTP daemon threads.",
///                                 environment: "ENGAGE_HTTP_THREADS", default: 2, validate: .range(1...64))
///     let threads = arguments[Self.threads]       // an Int, checked when the command line was parsed
///
/// The value comes from the command line (the last occurrence wins), then the environment
/// variable when set and not empty, then the default. Options without a default have an optional
/// type (`Option<String?>`); `ParsedArguments.required` reads them where they must be given.
public struct Option<Value: Sendable>: CommandOption {
    public let name: String
    public let valueName: String
    public let help: String
    public let environment: String?
    public let defaultValue: Value
    public let defaultText: String?
    /// What follows "invalid value 'x' for option '--name':" when a value is refused.
    public let requirement: String
    /// A refused value is not repeated in the error (keys, secrets).
    public let isSecret: Bool
    /// Every value it takes, when they can be listed (enumerations); shell completion offers them.
    public let choices: [String]?
    private let convert: @Sendable (String) -> Value?

    /// An option of any type: `parse` returns nil for text it refuses.
    public init(_ name: String, value valueName: String = "value", help: String, environment: String? = nil,
                default defaultValue: Value, defaultText: String?, requirement: String, secret isSecret: Bool = false,
                choices: [String]? = nil, parse convert: @escaping @Sendable (String) -> Value?) {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.environment = environment
        self.defaultValue = defaultValue
        self.defaultText = defaultText
        self.requirement = requirement
        self.isSecret = isSecret
        self.choices = choices
        self.convert = convert
    }

    /// `--name` as written on the command line.
    public var longName: String { "--" + name }

    /// The same option (name, variable, default and validation) with `help` of another command's:
    /// declared once, described where it is used.
    public func helping(_ help: String) -> Option {
        Option(name, value: valueName, help: help, environment: environment, default: defaultValue, defaultText: defaultText,
               requirement: requirement, secret: isSecret, choices: choices, parse: convert)
    }

    /// The value of `text`, or nil if the option refuses it.
    public func parse(_ text: String) -> Value? {
        convert(text)
    }

    public func resolve(given: [String], environment variables: [String: String], usage: String) throws(UsageError) -> ResolvedOption {
        var all: [any Sendable] = []
        for text in given {
            guard let value = convert(text) else { throw invalid(text, source: nil, usage: usage) }
            all.append(value)
        }
        if let last = all.last {
            return ResolvedOption(value: last, given: all)
        }
        if let environment, let text = variables[environment], !text.isEmpty {
            guard let value = convert(text) else { throw invalid(text, source: environment, usage: usage) }
            return ResolvedOption(value: value, given: [])
        }
        return ResolvedOption(value: defaultValue, given: [])
    }

    private func invalid(_ text: String, source: String?, usage: String) -> UsageError {
        let shown = isSecret ? "" : " '\(text)'"
        let from = source.map { " (from \($0))" } ?? ""
        return UsageError(code: .invalidValue, message: "invalid value\(shown) for option '\(longName)'\(from): \(requirement)", usage: usage)
    }
}

extension Option where Value: OptionValue {
    /// An option with a default, e.g. `default: 2, validate: .range(1...64)`.
    public init(_ name: String, value valueName: String = "value", help: String, environment: String? = nil,
                default defaultValue: Value, validate: Validation<Value>? = nil) {
        self.init(name, value: valueName, help: help, environment: environment, default: defaultValue,
                  defaultText: defaultValue.optionText,
                  requirement: validate?.requirement ?? "expected \(Value.optionExpectation)", choices: Value.optionChoices,
                  parse: { text in Value(optionText: text).flatMap { validate?.accepts($0) ?? true ? $0 : nil } })
    }
}

extension Option {
    /// An option without a default: nil unless given or set in the environment.
    public init<Wrapped: OptionValue>(_ name: String, value valueName: String = "value", help: String, environment: String? = nil,
                                      secret isSecret: Bool = false, validate: Validation<Wrapped>? = nil) where Value == Wrapped? {
        self.init(name, value: valueName, help: help, environment: environment,
                  requirement: validate?.requirement ?? "expected \(Wrapped.optionExpectation)", secret: isSecret,
                  choices: Wrapped.optionChoices, parse: { text in Wrapped(optionText: text).flatMap { validate?.accepts($0) ?? true ? $0 : nil } })
    }

    /// An option of any type without a default.
    public init<Wrapped: Sendable>(_ name: String, value valueName: String = "value", help: String, environment: String? = nil,
                                   requirement: String, secret isSecret: Bool = false, choices: [String]? = nil,
                                   parse: @escaping @Sendable (String) -> Wrapped?) where Value == Wrapped? {
        self.init(name, value: valueName, help: help, environment: environment, default: nil, defaultText: nil,
                  requirement: requirement, secret: isSecret, choices: choices, parse: { text in parse(text).map { .some($0) } })
    }
}

/// What a command's options have in common, whatever their type: the parser resolves them and
/// help shows them through this.
public protocol CommandOption: Sendable {
    var name: String { get }
    var valueName: String { get }
    var help: String { get }
    var environment: String? { get }
    /// Shown in help as `(default: ...)`.
    var defaultText: String? { get }
    /// Every value it takes, when they can be listed; shell completion offers them.
    var choices: [String]? { get }
    /// The option's value from the command line (`given`, in order), the environment or the
    /// default; a usage error when a value is refused.
    func resolve(given: [String], environment: [String: String], usage: String) throws(UsageError) -> ResolvedOption
}

/// An option's value once the command line was parsed, typed but erased.
public struct ResolvedOption: Sendable {
    let value: any Sendable
    /// Every value given on the command line, in order.
    let given: [any Sendable]
}

/// A check on an option's value, with the words the usage error uses when it fails.
public struct Validation<Value>: Sendable {
    /// What follows "invalid value 'x' for option '--name':", e.g. `expected an integer from 1 to 64`.
    public let requirement: String
    let accepts: @Sendable (Value) -> Bool

    public init(_ requirement: String, accepts: @escaping @Sendable (Value) -> Bool) {
        self.requirement = requirement
        self.accepts = accepts
    }
}

extension Validation where Value == Int {
    public static func range(_ range: ClosedRange<Int>) -> Validation {
        Validation("expected an integer from \(range.lowerBound) to \(range.upperBound)") { range.contains($0) }
    }
}

extension Validation where Value == String {
    /// A file or directory path: not empty (an empty one would quietly mean the current directory).
    public static let path = Validation("expected a path, not an empty value") { !$0.isEmpty }
}

/// A type an option's text converts to and from.
public protocol OptionValue: Sendable {
    init?(optionText: String)
    /// The value as written on the command line (help shows defaults this way).
    var optionText: String { get }
    /// What a valid value looks like, after "expected": `an integer`.
    static var optionExpectation: String { get }
    /// Every value, when they can be listed (enumerations); nil otherwise.
    static var optionChoices: [String]? { get }
}

extension OptionValue {
    public static var optionChoices: [String]? { nil }
}

extension String: OptionValue {
    public init?(optionText: String) { self = optionText }
    public var optionText: String { self }
    public static var optionExpectation: String { "a value" }
}

extension Int: OptionValue {
    public init?(optionText: String) { self.init(optionText) }
    public var optionText: String { String(self) }
    public static var optionExpectation: String { "an integer" }
}

extension Double: OptionValue {
    public init?(optionText: String) { self.init(optionText) }
    /// Whole numbers without a fraction (`10`, not `10.0`).
    public var optionText: String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
    public static var optionExpectation: String { "a number" }
}

/// Enumerations become options by declaring the conformance: their raw values are the choices.
extension OptionValue where Self: RawRepresentable & CaseIterable, RawValue == String {
    public init?(optionText: String) { self.init(rawValue: optionText) }
    public var optionText: String { rawValue }
    public static var optionExpectation: String { "one of " + allCases.map(\.rawValue).joined(separator: ", ") }
    public static var optionChoices: [String]? { allCases.map(\.rawValue) }
}

/// `--name`, true when present.
public struct Flag: Sendable {
    public let name: String
    public let help: String

    public init(_ name: String, help: String) {
        self.name = name
        self.help = help
    }

    /// `--name` as written on the command line.
    public var longName: String { "--" + name }
}

/// A positional argument, in declaration order.
public struct Argument: Sendable {
    public let name: String
    public let help: String
    public let isOptional: Bool
    /// Takes every remaining positional argument, none or more (the last argument only); what
    /// looks like an option goes after `--`: `engage db psql -- -c 'select 1'`.
    public let isVariadic: Bool
    /// Every value it takes, when they can be listed; shell completion offers them.
    public let choices: [String]

    public init(_ name: String, help: String, optional isOptional: Bool = false, choices: [String] = []) {
        self.name = name
        self.help = help
        self.isOptional = isOptional
        self.isVariadic = false
        self.choices = choices
    }

    /// The remaining positional arguments, passed on (to another program, say).
    public static func remaining(_ name: String, help: String) -> Argument {
        Argument(remaining: name, help: help)
    }

    private init(remaining name: String, help: String) {
        self.name = name
        self.help = help
        self.isOptional = true
        self.isVariadic = true
        self.choices = []
    }
}
