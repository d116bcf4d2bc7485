/// A length of time as written on the command line: whole days, hours, minutes and seconds,
/// largest first, each at most once: `31d`, `36h`, `30d12h`, `90m`.
public struct TimeSpan: Sendable, Hashable, Comparable, OptionValue, CustomStringConvertible {
    public var seconds: Int64

    public init(seconds: Int64) {
        self.seconds = seconds
    }

    /// Whole seconds of `duration` (a fraction is dropped).
    public init(_ duration: Duration) {
        seconds = duration.components.seconds
    }

    public var duration: Duration { .seconds(seconds) }

    private static let units: [(symbol: Character, seconds: Int64, word: String)] = [
        ("d", 86_400, "day"), ("h", 3_600, "hour"), ("m", 60, "minute"), ("s", 1, "second"),
    ]

    public init?(optionText: String) {
        var total: Int64 = 0
        var digits = ""
        var nextUnit = 0
        var sawUnit = false
        for character in optionText {
            if character.isASCII && character.isNumber {
                digits.append(character)
                continue
            }
            guard let index = Self.units.firstIndex(where: { $0.symbol == character }), index >= nextUnit,
                  !digits.isEmpty, digits.count <= 12, let value = Int64(digits) else { return nil }
            let (product, overflow) = value.multipliedReportingOverflow(by: Self.units[index].seconds)
            guard !overflow, total <= Int64.max - product else { return nil }
            total += product
            digits = ""
            nextUnit = index + 1
            sawUnit = true
        }
        guard sawUnit, digits.isEmpty else { return nil }
        seconds = total
    }

    /// `30d1h10m`; `0s` for nothing.
    public var optionText: String {
        let parts = parts()
        return parts.isEmpty ? "0s" : parts.map { "\($0.count)\($0.unit.symbol)" }.joined()
    }

    public static var optionExpectation: String { "a time span such as 31d, 36h or 30d12h" }

    /// `30 days 1 hour 10 minutes`.
    public var description: String {
        let parts = parts()
        return parts.isEmpty ? "0 seconds" : parts.map { "\($0.count) \($0.unit.word)\($0.count == 1 ? "" : "s")" }.joined(separator: " ")
    }

    private func parts() -> [(count: Int64, unit: (symbol: Character, seconds: Int64, word: String))] {
        var rest = seconds
        var parts: [(Int64, (symbol: Character, seconds: Int64, word: String))] = []
        for unit in Self.units where rest >= unit.seconds {
            parts.append((rest / unit.seconds, unit))
            rest %= unit.seconds
        }
        return parts
    }

    public static func < (lhs: TimeSpan, rhs: TimeSpan) -> Bool { lhs.seconds < rhs.seconds }
}
