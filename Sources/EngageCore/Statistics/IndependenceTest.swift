/// Pearson's chi-square test of independence of a two-row table (`first` and `second` counts per
/// column), without continuity correction (scipy's `chi2_contingency(correction=False)`): whether
/// the two rows spread over the columns alike. Columns empty in both rows are left out; nil
/// without two columns left or with a row of no counts.
public enum IndependenceTest {
    public static func twoRows(_ first: [Double], _ second: [Double]) -> ChiSquareTest? {
        let columns = zip(first, second).filter { $0 + $1 > 0 }
        let firstTotal = columns.reduce(0) { $0 + $1.0 }, secondTotal = columns.reduce(0) { $0 + $1.1 }
        guard columns.count >= 2, firstTotal > 0, secondTotal > 0 else { return nil }
        let total = firstTotal + secondTotal
        var statistic = 0.0
        for (a, b) in columns {
            let expectedA = (a + b) * firstTotal / total, expectedB = (a + b) * secondTotal / total
            statistic += (a - expectedA) * (a - expectedA) / expectedA + (b - expectedB) * (b - expectedB) / expectedB
        }
        return ChiSquareTest(statistic: statistic, degreesOfFreedom: Double(columns.count - 1))
    }
}
