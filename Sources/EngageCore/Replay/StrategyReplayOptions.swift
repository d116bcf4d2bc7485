/// The options of a strategy replay as a person writes them, checked.
public enum StrategyReplayOptions {
    /// The model called `name` in `catalog`.
    public static func strategy(_ name: String, in catalog: StrategyCatalog = .standard)
        throws(ReplayOptionProblem) -> any AttachmentStrategyModel {
        guard let model = catalog[name] else {
            throw ReplayOptionProblem(option: "strategy", value: name,
                                      expected: "one of " + catalog.names.joined(separator: ", "))
        }
        return model
    }

    /// An RFC 3339 time (`2026-11-29T00:00:00Z`), or a duration back from `now`: a whole number
    /// of seconds, minutes, hours, days or weeks (`90m`, `36h`, `7d`, `2w`), at most ten years.
    public static func since(_ text: String, now: Timestamp) throws(ReplayOptionProblem) -> Timestamp {
        if let time = Timestamp(rfc3339: text) { return time }
        let problem = ReplayOptionProblem(option: "since", value: text,
                                          expected: "an RFC 3339 time such as 2026-11-29T00:00:00Z or a duration such as 7d, 36h or 90m")
        guard let unit = text.last, let count = Int64(text.dropLast()), count >= 0 else { throw problem }
        let seconds: Int64
        switch unit {
        case "s": seconds = 1
        case "m": seconds = 60
        case "h": seconds = 3_600
        case "d": seconds = 86_400
        case "w": seconds = 7 * 86_400
        default: throw problem
        }
        guard count <= 3_650 * 86_400 / seconds else { throw problem }
        return now.adding(microseconds: -count * seconds * Timestamp.microsecondsPerSecond)
    }

    /// Categories given as repeated options and comma-separated lists; blanks around names are
    /// ignored, empty names are refused.
    public static func categories(_ values: [String]) throws(ReplayOptionProblem) -> Set<String> {
        var names = Set<String>()
        for value in values {
            for part in value.split(separator: ",", omittingEmptySubsequences: false) {
                let name = part.trimmed(" ")
                guard !name.isEmpty else {
                    throw ReplayOptionProblem(option: "category", value: value, expected: "category names separated by commas")
                }
                names.insert(name)
            }
        }
        return names
    }
}

/// An option value a strategy replay cannot use; `description` reads like the command line's
/// own usage errors.
public struct ReplayOptionProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The option's name without dashes, e.g. `strategy`.
    public var option: String
    public var value: String
    public var expected: String

    public var description: String {
        "invalid value '\(value)' for option '--\(option)': expected \(expected)"
    }
}

extension Substring {
    fileprivate func trimmed(_ blank: Character) -> String {
        String(drop { $0 == blank }.reversed().drop { $0 == blank }.reversed())
    }
}
