/// The first thing wrong with one event: the wire path of the field (`occurred_at`,
/// `attachment.kind`, `media[2].format`; nil for the event as a whole) and a sentence fragment
/// that completes it (`is required`, `must be one of rich, plain`, `unknown field`).
public struct EventProblem: Error, Sendable, Equatable, Hashable, CustomStringConvertible {
    public var field: String?
    public var problem: String

    public init(field: String?, problem: String) {
        self.field = field
        self.problem = problem
    }

    public var description: String {
        if let field { return "\(field): \(problem)" }
        return problem
    }
}

extension EventProblem {
    static func required(_ field: String) -> EventProblem {
        EventProblem(field: field, problem: "is required")
    }

    static func unknownField(_ field: String) -> EventProblem {
        EventProblem(field: field, problem: "unknown field")
    }

    static let timestampProblem = "must be an RFC 3339 timestamp with a time zone"

    /// "45 days", "1 hour", "10 minutes": the largest whole unit, rounded down.
    static func describe(microseconds: Int64) -> String {
        let units: [(Int64, String)] = [
            (Timestamp.microsecondsPerDay, "day"), (3_600_000_000, "hour"),
            (60_000_000, "minute"), (1_000_000, "second"),
        ]
        for (size, name) in units where microseconds >= size {
            let n = microseconds / size
            return "\(n) \(name)\(n == 1 ? "" : "s")"
        }
        return "\(microseconds) microseconds"
    }
}
