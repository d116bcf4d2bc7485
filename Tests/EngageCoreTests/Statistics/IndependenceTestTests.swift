import Testing
@testable import EngageCore

/// Against scipy 1.x: `scipy.stats.chi2_contingency([first, second], correction=False)` printed
/// its statistic, degrees of freedom and p-value for each table.
@Suite struct IndependenceTestTests {
    @Test(arguments: [
        ([100.0, 100, 3], [100.0, 90, 9], 3.486860019568937, 2.0, 0.1749193952418992),
        ([50.0, 60, 40, 30], [45.0, 70, 30, 41], 4.067918021384152, 3.0, 0.2542229889914234),
        ([200.0, 20], [20.0, 200], 294.54545454545456, 1.0, 5.083571813179022e-66),
    ] as [([Double], [Double], Double, Double, Double)])
    func equalsScipy(first: [Double], second: [Double], statistic: Double, df: Double, p: Double) throws {
        let test = try #require(IndependenceTest.twoRows(first, second))
        #expect(matches(test.statistic, statistic, relative: 1e-12))
        #expect(test.degreesOfFreedom == df)
        #expect(matches(test.pValue, p, relative: 1e-9))
    }

    /// A column empty in both rows carries nothing (scipy refuses a zero expected count); one
    /// column or an empty row leaves nothing to test.
    @Test func emptyColumnsAndRowsLeaveNothingToTest() throws {
        let withEmpty = try #require(IndependenceTest.twoRows([100, 0, 100, 3], [100, 0, 90, 9]))
        #expect(matches(withEmpty.statistic, 3.486860019568937, relative: 1e-12))
        #expect(withEmpty.degreesOfFreedom == 2)
        #expect(IndependenceTest.twoRows([5], [7]) == nil)
        #expect(IndependenceTest.twoRows([0, 0], [3, 4]) == nil)
    }
}
