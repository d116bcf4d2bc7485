import Foundation

/// RFC 3339 timestamps in UTC with milliseconds, `2026-11-29T19:16:23.120Z`, computed with
/// integer arithmetic (no formatter objects, which are neither cheap nor `Sendable`).
enum Timestamp {
    static func rfc3339(_ date: Date) -> String {
        // Nearest microsecond first, so that binary fractions such as .12 do not print as .119.
        // A time no four-digit year can carry, or not finite, is written as the nearest one that
        // can be (NaN as the first): `record` refuses such an event before it is queued
        // (`EventFieldError`), and `EngageEvent.json` never traps.
        let exact = (date.timeIntervalSince1970 * 1_000_000).rounded()
        let microseconds = exact.isNaN ? firstMicrosecond : Int64(min(max(exact, Double(firstMicrosecond)), Double(lastMicrosecond)))
        let (totalMS, _) = floorDivide(microseconds, 1000)
        let (days, msOfDay) = floorDivide(totalMS, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let hour = msOfDay / 3_600_000
        let minute = msOfDay / 60_000 % 60
        let second = msOfDay / 1000 % 60
        let millisecond = msOfDay % 1000
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(hour, 2) + ":" + pad(minute, 2) + ":"
            + pad(second, 2) + "." + pad(millisecond, 3) + "Z"
    }

    /// 0000-01-01T00:00:00.000000Z and 9999-12-31T23:59:59.999000Z, in microseconds since 1970.
    static let firstMicrosecond: Int64 = -62_167_219_200_000_000
    static let lastMicrosecond: Int64 = 253_402_300_799_999_000

    /// The inverse of `rfc3339(_:)` for the form the client writes (UTC, `Z`, up to 18 fraction
    /// digits); nil for anything else. The text comes from a queue file read back, which could be
    /// damaged: no input traps.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 39, bytes.last == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"),
              bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
              bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), bytes.count > 21, let digits = number(20..<bytes.count - 1) else { return nil }
            fraction = Double(digits) / pow(10, Double(bytes.count - 21))
        } else if bytes[19] != UInt8(ascii: "Z") {
            return nil
        }
        let seconds = days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// A proleptic Gregorian date to days since 1970-01-01 (the inverse of `civil(fromDays:)`).
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value / divisor
        let remainder = value % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// Days since 1970-01-01 to a proleptic Gregorian date (the era-based method: 400-year eras
    /// of 146,097 days, years starting in March so that the leap day falls last).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
