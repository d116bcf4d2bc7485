import Foundation

/// Named places where a test can make the process fail on purpose, set by the environment:
/// `ENGAGE_FAILPOINTS=projector.after-apply=crash` (exit at once, like kill -9) or `=error`
/// (throw, as if the database failed there). Unset in production: every hit is a no-op.
public struct Failpoints: Sendable {
    public enum Action: String, Sendable { case crash, error }

    private let actions: [String: Action]

    public static let none = Failpoints(actions: [:])

    public init(actions: [String: Action]) {
        self.actions = actions
    }

    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Failpoints {
        guard let spec = environment["ENGAGE_FAILPOINTS"], !spec.isEmpty else { return .none }
        var actions: [String: Action] = [:]
        for item in spec.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, let action = Action(rawValue: parts[1]) { actions[parts[0]] = action }
        }
        return Failpoints(actions: actions)
    }

    public struct Triggered: Error, CustomStringConvertible {
        public var name: String
        public var description: String { "failpoint \(name) triggered" }
    }

    public func hit(_ name: String) throws {
        guard let action = actions[name] else { return }
        switch action {
        case .crash: _exit(137)
        case .error: throw Triggered(name: name)
        }
    }
}
