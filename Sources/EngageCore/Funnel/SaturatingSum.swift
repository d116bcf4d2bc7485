/// Sums of byte counts for display: each event may report up to 2^53 bytes, so a bucket of a
/// thousand such events passes what 64 bits hold. The report's and the replay's totals stop at
/// the largest (or smallest) Int rather than trap: one request of absurd sizes must not take them
/// down. (The read model keeps exact sums instead, `TelemetryContribution.Counters.bytes`: it also
/// subtracts, and a sum held at a bound would no longer equal a rebuild. Adding values that are
/// not negative, as these sums do, holding at `Int.max` gives the same result in any order.)
extension Int {
    /// `self + other`, held at `Int.max` or `Int.min` instead of overflowing.
    public func saturatingAdding(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}
