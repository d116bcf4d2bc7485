/// Why the local cluster could not be prepared, started or stopped. Safe to show to a person.
public struct EmbeddedPostgresError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var output: String

    public init(_ message: String, output: String = "") {
        self.message = message
        self.output = output
    }

    public var description: String {
        output.isEmpty ? message : "\(message)\n\(output.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
}

import Foundation
