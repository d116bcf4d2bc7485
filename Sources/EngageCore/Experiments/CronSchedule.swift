/// A five-field cron schedule in UTC: `minute hour day-of-month month day-of-week`.
///
/// Each field is `*` or a comma-separated list of elements; an element is a value (`5`), a range
/// (`1-5`), either of those or `*` followed by a step (`*/15`, `10-40/5`, and `7/10`, which means
/// `7-<max>/10`). Months accept `jan` ... `dec` and days of the week `sun` ... `sat` (any case),
/// also in ranges (`mon-fri`). Day of week 0 and 7 are both Sunday.
///
/// Days follow Vixie cron: when both day fields are restricted (neither starts with `*`), a day
/// matches if EITHER matches (`0 9 1 * mon` runs on the 1st and on every Monday); otherwise both
/// must match, the `*` one trivially. Times are whole minutes, UTC, no daylight saving.
public struct CronSchedule: Sendable, Hashable, CustomStringConvertible {
    /// The five fields as given, joined by single spaces.
    public let expression: String
    /// Bit `n` is set when value `n` is scheduled.
    let minutes: UInt64
    let hours: UInt64
    let daysOfMonth: UInt64
    let months: UInt64
    /// Bits 0 (Sunday) ... 6 (Saturday); 7 is folded into 0.
    let daysOfWeek: UInt64
    let dayOfMonthRestricted: Bool
    let dayOfWeekRestricted: Bool

    /// Parses a five-field expression; throws the first problem, naming its field.
    public init(_ expression: String) throws(CronParseError) {
        let fields = expression.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5 else { throw CronParseError(field: nil, reason: .fieldCount(fields.count)) }
        self.expression = fields.joined(separator: " ")
        minutes = try CronField.minute.parse(fields[0])
        hours = try CronField.hour.parse(fields[1])
        daysOfMonth = try CronField.dayOfMonth.parse(fields[2])
        months = try CronField.month.parse(fields[3])
        let weekdays = try CronField.dayOfWeek.parse(fields[4])
        daysOfWeek = (weekdays | (weekdays >> 7)) & 0x7F
        dayOfMonthRestricted = !fields[2].hasPrefix("*")
        dayOfWeekRestricted = !fields[4].hasPrefix("*")
    }

    /// Every hour on the hour, `0 * * * *`.
    public static let hourly = try! CronSchedule("0 * * * *")

    public var description: String { expression }

    // MARK: Searching

    /// The Gregorian calendar repeats its dates and weekdays every 400 years (146,097 days): a
    /// schedule with no day within them never fires. Gaps between scheduled days can pass ten
    /// years: a day of month and a weekday both restricted when the weekday field begins with
    /// `*` (`0 0 31 12 */7`, December 31 on a Sunday: 2034, then 2045).
    private static let searchDays: Int64 = 146_097
    private static let microsecondsPerMinute: Int64 = 60_000_000

    /// The first scheduled time strictly after `time`; nil when the schedule never fires
    /// (such as `0 0 30 2 *`).
    public func next(after time: Timestamp) -> Timestamp? {
        let minute = floorDivide(time.microsecondsSinceEpoch, Self.microsecondsPerMinute) + 1
        var day = floorDivide(minute, 1440)
        var fromMinute = Int(minute - day * 1440)
        for _ in 0..<Self.searchDays {
            if matches(day: day), let found = firstTime(atOrAfter: fromMinute) {
                return Self.timestamp(day: day, minuteOfDay: found)
            }
            day += 1
            fromMinute = 0
        }
        return nil
    }

    /// The last scheduled time at or before `time`; nil when there is none within 400 years.
    public func previous(atOrBefore time: Timestamp) -> Timestamp? {
        let minute = floorDivide(time.microsecondsSinceEpoch, Self.microsecondsPerMinute)
        var day = floorDivide(minute, 1440)
        var toMinute = Int(minute - day * 1440)
        for _ in 0..<Self.searchDays {
            if matches(day: day), let found = lastTime(atOrBefore: toMinute) {
                return Self.timestamp(day: day, minuteOfDay: found)
            }
            day -= 1
            toMinute = 1439
        }
        return nil
    }

    /// The latest scheduled time in `(lastRun, now]`, or nil when none is due. After downtime
    /// that missed several scheduled times this is only the latest of them, so a scheduler runs
    /// once, not once per missed time. Without a last run, the latest time at or before `now`
    /// is due.
    public func mostRecentDue(after lastRun: Timestamp?, now: Timestamp) -> Timestamp? {
        guard let latest = previous(atOrBefore: now) else { return nil }
        if let lastRun, latest <= lastRun { return nil }
        return latest
    }

    /// False for a schedule no date matches (`0 0 30 2 *`, `0 0 31 4,6 *`).
    public var everFires: Bool {
        next(after: Timestamp(microsecondsSinceEpoch: 0)) != nil
    }

    /// Whether a whole-minute UTC time is scheduled.
    public func isScheduled(_ time: Timestamp) -> Bool {
        guard time.microsecondsSinceEpoch % Self.microsecondsPerMinute == 0 else { return false }
        return previous(atOrBefore: time) == time
    }

    // MARK: Private

    private func matches(day: Int64) -> Bool {
        let (_, month, dayOfMonth) = Timestamp.civilFromDays(day)
        guard months & (1 << UInt64(month)) != 0 else { return false }
        // 1970-01-01 was a Thursday (4).
        let weekday = UInt64(((day % 7) + 7 + 4) % 7)
        let domMatches = daysOfMonth & (1 << UInt64(dayOfMonth)) != 0
        let dowMatches = daysOfWeek & (1 << weekday) != 0
        if dayOfMonthRestricted && dayOfWeekRestricted { return domMatches || dowMatches }
        return domMatches && dowMatches
    }

    /// The first scheduled minute of a matching day at or after `minuteOfDay`.
    private func firstTime(atOrAfter minuteOfDay: Int) -> Int? {
        var hour = minuteOfDay / 60
        var fromMinute = minuteOfDay % 60
        while hour < 24 {
            if hours & (1 << UInt64(hour)) != 0 {
                let remaining = minutes >> UInt64(fromMinute)
                if remaining != 0 { return hour * 60 + fromMinute + remaining.trailingZeroBitCount }
            }
            hour += 1
            fromMinute = 0
        }
        return nil
    }

    /// The last scheduled minute of a matching day at or before `minuteOfDay`.
    private func lastTime(atOrBefore minuteOfDay: Int) -> Int? {
        var hour = minuteOfDay / 60
        var toMinute = minuteOfDay % 60
        while hour >= 0 {
            if hours & (1 << UInt64(hour)) != 0 {
                let allowed = minutes & ((UInt64(1) << UInt64(toMinute + 1)) - 1)
                if allowed != 0 { return hour * 60 + 63 - allowed.leadingZeroBitCount }
            }
            hour -= 1
            toMinute = 59
        }
        return nil
    }

    private static func timestamp(day: Int64, minuteOfDay: Int) -> Timestamp {
        Timestamp(microsecondsSinceEpoch: (day * 1440 + Int64(minuteOfDay)) * microsecondsPerMinute)
    }
}

private func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}

// MARK: - Fields

/// One of the five fields of a cron expression.
public enum CronField: String, Sendable, Hashable, CaseIterable {
    case minute
    case hour
    case dayOfMonth = "day-of-month"
    case month
    case dayOfWeek = "day-of-week"

    /// The values the field accepts (day of week 7 is Sunday again).
    public var range: ClosedRange<Int> {
        switch self {
        case .minute: 0...59
        case .hour: 0...23
        case .dayOfMonth: 1...31
        case .month: 1...12
        case .dayOfWeek: 0...7
        }
    }

    private var names: [String] {
        switch self {
        case .month: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        case .dayOfWeek: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
        default: []
        }
    }

    /// The bit set of the field's text.
    func parse(_ text: String) throws(CronParseError) -> UInt64 {
        var bits: UInt64 = 0
        for element in text.split(separator: ",", omittingEmptySubsequences: false) {
            bits |= try parseElement(String(element))
        }
        return bits
    }

    private func parseElement(_ element: String) throws(CronParseError) -> UInt64 {
        guard !element.isEmpty else { throw CronParseError(field: self, reason: .emptyElement) }
        let parts = element.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw CronParseError(field: self, reason: .invalidElement(element)) }
        var step = 1
        if parts.count == 2 {
            guard let value = Int(parts[1]), value > 0, value <= range.upperBound else {
                throw CronParseError(field: self, reason: .invalidStep(String(parts[1])))
            }
            step = value
        }
        let base = String(parts[0])
        let low: Int, high: Int
        if base == "*" {
            low = range.lowerBound
            high = self == .dayOfWeek ? 6 : range.upperBound
        } else if let dash = base.firstIndex(of: "-") {
            low = try value(String(base[..<dash]))
            high = try value(String(base[base.index(after: dash)...]))
            guard low <= high else { throw CronParseError(field: self, reason: .reversedRange(low, high)) }
        } else {
            low = try value(base)
            // `7/10` means `7-<max>/10`; a lone value is just itself.
            high = parts.count == 2 ? range.upperBound : low
        }
        var bits: UInt64 = 0
        for n in stride(from: low, through: high, by: step) { bits |= 1 << UInt64(n) }
        return bits
    }

    private func value(_ text: String) throws(CronParseError) -> Int {
        if let index = names.firstIndex(of: text.lowercased()) {
            return self == .month ? index + 1 : index
        }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let number = Int(text) else {
            throw CronParseError(field: self, reason: .invalidValue(text))
        }
        guard range.contains(number) else { throw CronParseError(field: self, reason: .outOfRange(number)) }
        return number
    }
}

/// Why a cron expression was rejected, and in which field.
public struct CronParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// Not five fields.
        case fieldCount(Int)
        /// Nothing between two commas, or at an end of the field.
        case emptyElement
        /// More than one `/`.
        case invalidElement(String)
        /// Neither a number nor a name the field knows.
        case invalidValue(String)
        case outOfRange(Int)
        /// A range whose start exceeds its end.
        case reversedRange(Int, Int)
        /// A step that is not a positive number within the field's range.
        case invalidStep(String)
    }

    /// Nil for a problem with the expression as a whole.
    public let field: CronField?
    public let reason: Reason

    public init(field: CronField?, reason: Reason) {
        self.field = field
        self.reason = reason
    }

    public var description: String {
        let text: String
        switch reason {
        case .fieldCount(let n):
            text = "expected 5 fields (minute hour day-of-month month day-of-week), found \(n)"
        case .emptyElement:
            text = "empty list element"
        case .invalidElement(let element):
            text = "'\(element)' has more than one step"
        case .invalidValue(let value):
            let names = field == .month ? " or month name" : field == .dayOfWeek ? " or day name" : ""
            text = "'\(value)' is not a number\(names)"
        case .outOfRange(let value):
            let range = field?.range ?? 0...0
            text = "\(value) is out of range \(range.lowerBound)-\(range.upperBound)"
        case .reversedRange(let low, let high):
            text = "range \(low)-\(high) ends before it starts"
        case .invalidStep(let step):
            text = "step '\(step)' must be a number from 1 to \(field?.range.upperBound ?? 0)"
        }
        guard let field else { return text }
        return "\(field.rawValue): \(text)"
    }
}
