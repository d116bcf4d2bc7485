/// A calendar day in UTC: the day buckets of the read models.
public struct UTCDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Days since 1970-01-01 (negative before it).
    public var daysSinceEpoch: Int64

    public init(daysSinceEpoch: Int64) {
        self.daysSinceEpoch = daysSinceEpoch
    }

    /// The day that contains `instant` (rounding down, also before 1970).
    public init(_ instant: Timestamp) {
        let us = instant.microsecondsSinceEpoch
        let days = us / Timestamp.microsecondsPerDay
        daysSinceEpoch = us % Timestamp.microsecondsPerDay < 0 ? days - 1 : days
    }

    /// The day of a proleptic Gregorian date, nil when the date does not exist.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...12).contains(month), day >= 1, day <= Timestamp.daysIn(month: month, year: year) else {
            return nil
        }
        daysSinceEpoch = Timestamp.daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day))
    }

    /// Midnight UTC at the start of the day.
    public var start: Timestamp {
        Timestamp(microsecondsSinceEpoch: daysSinceEpoch * Timestamp.microsecondsPerDay)
    }

    /// `2026-11-29`.
    public var description: String {
        let (year, month, day) = Timestamp.civilFromDays(daysSinceEpoch)
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value.magnitude)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return (year < 0 ? "-" : "") + padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
    }

    public static func < (a: UTCDay, b: UTCDay) -> Bool {
        a.daysSinceEpoch < b.daysSinceEpoch
    }
}
