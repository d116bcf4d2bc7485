import EngageCore

/// Why a lifecycle operation was refused. `code` is stable; `description` is safe to show.
public struct ExperimentStoreError: Error, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: String, Sendable, Equatable {
        /// The definition has problems (all of them in `problems`).
        case invalidDefinition = "invalid-definition"
        /// No experiment with that id (for that app).
        case notFound = "experiment-not-found"
        /// An experiment with that id exists already.
        case alreadyExists = "experiment-exists"
        /// The experiment's status does not allow the change.
        case invalidTransition = "invalid-transition"
    }

    public var code: Code
    public var experimentID: String
    public var problems: [ExperimentProblem]
    public var detail: String

    public init(code: Code, experimentID: String, problems: [ExperimentProblem] = [], detail: String) {
        self.code = code
        self.experimentID = experimentID
        self.problems = problems
        self.detail = detail
    }

    public var description: String { detail }

    public var debugDescription: String {
        "ExperimentStoreError(code: \(code.rawValue), experiment: \(experimentID), detail: \(detail), problems: \(problems))"
    }

    static func notFound(_ id: String) -> ExperimentStoreError {
        ExperimentStoreError(code: .notFound, experimentID: id, detail: "no experiment \(id)")
    }
}
