/// Sums of byte counts: each event may report up to 2^53 bytes, so a bucket of a thousand such
/// events passes what 64 bits hold. Such a sum stops at the largest (or smallest) Int rather than
/// trap: one request of absurd sizes must not take the projector, the report or the replay down,
/// and again after every restart, since the events stay in the log.
extension Int {
    /// `self + other`, held at `Int.max` or `Int.min` instead of overflowing.
    public func saturatingAdding(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self + sign * other` for a sign of 1 or -1, held like `saturatingAdding`.
    public func saturatingAdding(_ other: Int, sign: Int) -> Int {
        guard sign < 0 else { return saturatingAdding(other) }
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other < 0 ? .max : .min
    }
}
