/// An instant in UTC with microsecond precision: microseconds since 1970-01-01T00:00:00Z
/// (PostgreSQL `timestamptz` has the same resolution).
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var microsecondsSinceEpoch: Int64

    public init(microsecondsSinceEpoch: Int64) {
        self.microsecondsSinceEpoch = microsecondsSinceEpoch
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        a.microsecondsSinceEpoch < b.microsecondsSinceEpoch
    }

    public static let microsecondsPerSecond: Int64 = 1_000_000
    public static let microsecondsPerDay: Int64 = 86_400 * microsecondsPerSecond

    /// The timestamp moved by `microseconds` (negative moves back).
    public func adding(microseconds: Int64) -> Timestamp {
        Timestamp(microsecondsSinceEpoch: microsecondsSinceEpoch + microseconds)
    }

    /// The formatted RFC 3339 text, see `rfc3339`.
    public var description: String { rfc3339 }
}

// MARK: - Parsing

extension Timestamp {
    /// Parses an RFC 3339 `date-time`: `2026-11-29T19:16:23Z`, `2026-11-29t19:16:23.123456z`,
    /// `2026-11-29T19:16:23+02:00`. A zone (`Z` or `±HH:MM`) is required; up to 9 fraction digits
    /// are accepted and truncated to microseconds; months, days (leap years included), hours,
    /// minutes and seconds are range-checked (leap second 60 is rejected). The resulting instant
    /// must lie in years 0000 through 9999 UTC.
    public init?(rfc3339 text: String) {
        let bytes = Array(text.utf8)
        guard let parsed = Timestamp.parse(rfc3339: bytes, bytes.indices) else { return nil }
        self = parsed
    }

    /// Parses the bytes in `range`; see `init?(rfc3339:)`.
    public static func parse(rfc3339 bytes: [UInt8], _ range: Range<Int>) -> Timestamp? {
        let count = range.count
        guard count >= 20 else { return nil }
        let p = range.lowerBound
        @inline(__always) func digits(_ at: Int, _ n: Int) -> Int? {
            var value = 0
            for k in p + at..<p + at + n {
                let d = bytes[k] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                value = value * 10 + Int(d)
            }
            return value
        }
        guard let year = digits(0, 4), bytes[p + 4] == UInt8(ascii: "-"),
              let month = digits(5, 2), bytes[p + 7] == UInt8(ascii: "-"),
              let day = digits(8, 2), bytes[p + 10] | 0x20 == UInt8(ascii: "t"),
              let hour = digits(11, 2), bytes[p + 13] == UInt8(ascii: ":"),
              let minute = digits(14, 2), bytes[p + 16] == UInt8(ascii: ":"),
              let second = digits(17, 2)
        else { return nil }
        guard month >= 1 && month <= 12, day >= 1 && day <= daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 59
        else { return nil }

        var i = p + 19
        let end = range.upperBound
        var micros: Int64 = 0
        if bytes[i] == UInt8(ascii: ".") {
            i += 1
            var n = 0
            while i < end, bytes[i] &- UInt8(ascii: "0") < 10 {
                if n < 6 { micros = micros * 10 + Int64(bytes[i] &- UInt8(ascii: "0")) }
                n += 1
                i += 1
            }
            guard n >= 1 && n <= 9 else { return nil }
            for _ in min(n, 6)..<6 { micros *= 10 }
        }
        guard i < end else { return nil }
        var offsetSeconds = 0
        switch bytes[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard end - i == 6, let oh = digits(i + 1 - p, 2), bytes[i + 3] == UInt8(ascii: ":"),
                  let om = digits(i + 4 - p, 2), oh <= 23, om <= 59
            else { return nil }
            offsetSeconds = (oh * 60 + om) * 60
            if bytes[i] == UInt8(ascii: "-") { offsetSeconds = -offsetSeconds }
            i += 6
        default:
            return nil
        }
        guard i == end else { return nil }

        let days = daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day))
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        let value = Timestamp(microsecondsSinceEpoch: seconds * microsecondsPerSecond + micros)
        guard value >= .earliest && value < .endOfYear9999 else { return nil }
        return value
    }

    /// 0000-01-01T00:00:00Z, the earliest instant RFC 3339 can express in UTC.
    static let earliest = Timestamp(microsecondsSinceEpoch: daysFromCivil(year: 0, month: 1, day: 1) * microsecondsPerDay)
    /// 10000-01-01T00:00:00Z, just past the latest instant RFC 3339 can express in UTC.
    static let endOfYear9999 = Timestamp(microsecondsSinceEpoch: daysFromCivil(year: 10000, month: 1, day: 1) * microsecondsPerDay)

    static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

// MARK: - Formatting

extension Timestamp {
    /// RFC 3339 in UTC with a `Z`: `2026-11-29T19:16:23Z` when the microseconds are zero, else
    /// exactly six fraction digits, `2026-11-29T19:16:23.120000Z` (fixed width, so the text of
    /// instants within one second sorts like the instants). Years outside 0000...9999 (which the
    /// parser never produces) are written with a sign and at least four digits.
    public var rfc3339: String {
        String(decoding: rfc3339Bytes, as: UTF8.self)
    }

    /// `rfc3339` as UTF-8 bytes.
    public var rfc3339Bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(27)
        appendRFC3339(to: &out)
        return out
    }

    func appendRFC3339(to out: inout [UInt8]) {
        let us = microsecondsSinceEpoch
        var days = us / Timestamp.microsecondsPerDay
        var inDay = us % Timestamp.microsecondsPerDay
        if inDay < 0 {
            inDay += Timestamp.microsecondsPerDay
            days -= 1
        }
        let (year, month, day) = Timestamp.civilFromDays(days)
        let seconds = inDay / Timestamp.microsecondsPerSecond
        let fraction = inDay % Timestamp.microsecondsPerSecond

        func put(_ value: Int64, width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            while value / divisor >= 10 { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        if year < 0 { out.append(UInt8(ascii: "-")) }
        put(Int64(year.magnitude), width: 4)
        out.append(UInt8(ascii: "-"))
        put(month, width: 2)
        out.append(UInt8(ascii: "-"))
        put(day, width: 2)
        out.append(UInt8(ascii: "T"))
        put(seconds / 3600, width: 2)
        out.append(UInt8(ascii: ":"))
        put(seconds / 60 % 60, width: 2)
        out.append(UInt8(ascii: ":"))
        put(seconds % 60, width: 2)
        if fraction != 0 {
            out.append(UInt8(ascii: "."))
            put(fraction, width: 6)
        }
        out.append(UInt8(ascii: "Z"))
    }
}
