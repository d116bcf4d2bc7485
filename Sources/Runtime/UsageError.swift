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

    /// The text to print on stderr: `error: MESSAGE` and `usage: USAGE` lines.
    public var description: String {
        "error: \(message)\nusage: \(usage)"
    }
}
