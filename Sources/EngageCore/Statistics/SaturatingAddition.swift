extension FixedWidthInteger {
    /// `self + other`, held at the type's bound instead of trapping past it. For sums of counts
    /// read from the database: a row an older version or a hand edit left there may hold any
    /// value, and a report or a look must answer (or refuse) rather than crash on it.
    @inlinable
    public func addingSaturated(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }
}

extension FixedWidthInteger {
    /// Adds `other` in place, held at the type's bound (see `addingSaturated`).
    @inlinable
    public mutating func addSaturated(_ other: Self) {
        self = addingSaturated(other)
    }
}
