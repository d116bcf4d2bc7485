/// Sums of byte counts the replay shows: each event may report up to 2^53 bytes, so a thousand
/// such events pass what 64 bits hold. Such a total stops at the largest (or smallest) Int rather
/// than trap: one request of absurd sizes must not take the replay down. (The read model and the
/// report keep exact sums in 128 bits instead, `TelemetryContribution.Counters.bytes`: the model
/// also subtracts, and a sum held at a bound would no longer equal a rebuild.)
extension Int {
    /// `self + other`, held at `Int.max` or `Int.min` instead of overflowing.
    public func saturatingAdding(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}
