import Foundation

/// Numbers in JSON that Foundation parsed: a push's `userInfo`, the server's answers.
/// Foundation hands `true` and `false` over as `NSNumber`s (1 and 0) too, so without a check a
/// boolean where a number belongs reads as one: `"probability": true` as a certain arm, a
/// rejected entry's `"index": true` as the request's second event. These take numbers only, in
/// the ranges the server itself keeps to.
enum FoundationNumber {
    /// A JSON number; nil for a boolean or anything else.
    static func double(_ value: Any?) -> Double? {
        guard let number = value as? NSNumber, !isBoolean(number) else { return nil }
        return number.doubleValue
    }

    /// A whole number in `0...maximum`. An integer is read as parsed, to the last digit (a
    /// `Double` holds 53 bits of it); a fraction must be whole.
    static func whole(_ value: Any?, atMost maximum: Int) -> Int? {
        guard let number = value as? NSNumber, !isBoolean(number) else { return nil }
        let whole = isFloatingPoint(number) ? Int(exactly: number.doubleValue) : Int(exactly: number.int64Value)
        // An unsigned integer above `Int64.max` reads as a negative `int64Value`: refused too.
        guard let whole, whole >= 0, whole <= maximum else { return nil }
        return whole
    }

    /// A whole number, held to `range`: one beyond it (however far, as JSON allows) reads as the
    /// nearer end. nil for a boolean, a fraction or anything else.
    static func whole(_ value: Any?, clampedTo range: ClosedRange<Int>) -> Int? {
        guard let number = value as? NSNumber, !isBoolean(number) else { return nil }
        if isFloatingPoint(number) {
            let double = number.doubleValue
            guard double.isFinite, double.rounded(.towardZero) == double else { return nil }
            if double <= Double(range.lowerBound) { return range.lowerBound }
            if double >= Double(range.upperBound) { return range.upperBound }
            return Int(double)
        }
        // An unsigned integer above `Int64.max` reads as a negative `int64Value`.
        if number.objCType.pointee == CChar(UInt8(ascii: "Q")), number.uint64Value > UInt64(Int64.max) { return range.upperBound }
        return min(max(Int(number.int64Value), range.lowerBound), range.upperBound)
    }

    /// An experiment tag's probability: greater than 0 and at most 1, as the server takes it.
    static func probability(_ value: Any?) -> Double? {
        double(value).flatMap { $0 > 0 && $0 <= 1 ? $0 : nil }
    }

    /// Foundation's booleans alone have a C `char`'s type encoding ("c", on Apple's systems and
    /// on Linux): JSON's numbers parse to integers ("q", "Q") or doubles ("d").
    private static func isBoolean(_ number: NSNumber) -> Bool {
        number.objCType.pointee == CChar(UInt8(ascii: "c"))
    }

    private static func isFloatingPoint(_ number: NSNumber) -> Bool {
        let type = number.objCType.pointee
        return type == CChar(UInt8(ascii: "d")) || type == CChar(UInt8(ascii: "f"))
    }
}
