/// A chi-square statistic, its degrees of freedom and its upper-tail p-value.
public struct ChiSquareTest: Hashable, Sendable {
    public let statistic: Double
    public let degreesOfFreedom: Double
    public let pValue: Double

    init(statistic: Double, degreesOfFreedom: Double) {
        self.statistic = statistic
        self.degreesOfFreedom = degreesOfFreedom
        pValue = ChiSquare.survival(max(0, statistic), degreesOfFreedom: degreesOfFreedom)
    }
}

/// A test that strata share one effect (a small p-value: they disagree).
public struct HomogeneityTest: Hashable, Sendable {
    public let test: ChiSquareTest
    /// Strata that could not take part (the stratified summary's own exclusions aside).
    public let excluded: [ExcludedStratum]

    /// Higgins & Thompson's I^2 = max(0, (Q - df) / Q): the share of the spread between strata
    /// beyond what chance explains; 0 when the statistic is 0.
    public var inconsistency: Double {
        test.statistic > 0 ? max(0, (test.statistic - test.degreesOfFreedom) / test.statistic) : 0
    }
}
