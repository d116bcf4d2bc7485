import Foundation
import SeededRandom
import Testing
@testable import EngageCore

@Suite struct ProportionTests {
    @Test func wilsonMatchesSharedVectorsToSixDecimals() throws {
        for vector in Shared.wilson95 {
            let interval = try Proportion(successes: vector.successes, trials: vector.trials).wilsonInterval(confidence: 0.95)
            #expect(matches(interval.lower, vector.lower, decimals: 6), "\(vector.successes)/\(vector.trials)")
            #expect(matches(interval.upper, vector.upper, decimals: 6), "\(vector.successes)/\(vector.trials)")
        }
    }

    @Test func wilsonMatchesStatsmodels() throws {
        for vector in Independent.wilson95 + [Independent.wilson99] {
            let confidence = vector.lower == Independent.wilson99.lower ? 0.99 : 0.95
            let interval = try Proportion(successes: vector.successes, trials: vector.trials).wilsonInterval(confidence: confidence)
            #expect(matches(interval.lower, vector.lower, decimals: 14), "\(vector.successes)/\(vector.trials)")
            #expect(matches(interval.upper, vector.upper, decimals: 14), "\(vector.successes)/\(vector.trials)")
        }
    }

    @Test func wilsonEdgeCases() throws {
        let none = try Proportion(successes: 0, trials: 20).wilsonInterval()
        #expect(none.lower == 0)
        let all = try Proportion(successes: 20, trials: 20).wilsonInterval()
        #expect(all.upper == 1)
        let empty = try Proportion(successes: 0, trials: 0)
        #expect(empty.rate == 0)
        #expect(empty.wilsonInterval() == ConfidenceInterval(lower: 0, upper: 1))
    }

    @Test func invalidCountsAreRejected() {
        #expect(throws: StatisticsError(.invalidCounts)) { try Proportion(successes: 5, trials: 4) }
        #expect(throws: StatisticsError(.invalidCounts)) { try Proportion(successes: -1, trials: 4) }
        #expect(throws: StatisticsError(.invalidCounts)) { try Proportion(successes: 0, trials: -4) }
    }

    @Test func wilsonIntervalContainsTheRateAndStaysInTheUnitInterval() throws {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<2000 {
            let trials = Int.random(in: 1...5000, using: &generator)
            let successes = Int.random(in: 0...trials, using: &generator)
            let confidence = [0.8, 0.9, 0.95, 0.99, 0.999].randomElement(using: &generator)!
            let proportion = try Proportion(successes: successes, trials: trials)
            let interval = proportion.wilsonInterval(confidence: confidence)
            #expect(interval.contains(proportion.rate), "\(successes)/\(trials)")
            #expect(interval.lower >= 0 && interval.upper <= 1, "\(successes)/\(trials)")
        }
    }

    @Test func newcombeMatchesSharedVectorsToFourDecimals() throws {
        for vector in Shared.newcombeMethod10 {
            let comparison = try ProportionComparison(
                variant: Proportion(successes: vector.x1, trials: vector.n1),
                control: Proportion(successes: vector.x2, trials: vector.n2)
            )
            let interval = comparison.newcombeInterval(confidence: 0.95)
            #expect(matches(interval.lower, vector.lower, decimals: 4), "\(vector)")
            #expect(matches(interval.upper, vector.upper, decimals: 4), "\(vector)")
        }
    }

    @Test func newcombeMatchesStatsmodels() throws {
        for vector in Independent.newcombe95 {
            let comparison = try ProportionComparison(
                variant: Proportion(successes: vector.x1, trials: vector.n1),
                control: Proportion(successes: vector.x2, trials: vector.n2)
            )
            let interval = comparison.newcombeInterval()
            #expect(matches(interval.lower, vector.lower, decimals: 14), "\(vector)")
            #expect(matches(interval.upper, vector.upper, decimals: 14), "\(vector)")
        }
    }

    @Test func newcombeIntervalContainsTheDifference() throws {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let n1 = Int.random(in: 1...2000, using: &generator)
            let n2 = Int.random(in: 1...2000, using: &generator)
            let comparison = try ProportionComparison(
                variant: Proportion(successes: Int.random(in: 0...n1, using: &generator), trials: n1),
                control: Proportion(successes: Int.random(in: 0...n2, using: &generator), trials: n2)
            )
            let interval = comparison.newcombeInterval(confidence: 0.95)
            #expect(interval.contains(comparison.absoluteDifference), "\(comparison)")
            #expect(interval.lower >= -1 && interval.upper <= 1)
        }
    }

    @Test func smallSampleRule() throws {
        func flag(_ x1: Int, _ n1: Int, _ x2: Int, _ n2: Int) throws -> Bool {
            try ProportionComparison(
                variant: Proportion(successes: x1, trials: n1),
                control: Proportion(successes: x2, trials: n2)
            ).isSmallSample
        }
        #expect(try flag(100, 1000, 120, 1000) == false)
        #expect(try flag(10, 29, 10, 1000) == true) // n < 30
        #expect(try flag(4, 1000, 120, 1000) == true) // fewer than 5 successes
        #expect(try flag(100, 1000, 996, 1000) == true) // fewer than 5 failures
        #expect(try flag(5, 30, 25, 30) == false) // exactly at the thresholds
    }

    @Test func pooledZTestMatchesStatsmodels() throws {
        for vector in Independent.pooledZTest {
            let comparison = try ProportionComparison(
                variant: Proportion(successes: vector.x1, trials: vector.n1),
                control: Proportion(successes: vector.x2, trials: vector.n2)
            )
            #expect(matches(try comparison.pooledZTestPValue(), vector.p, relative: 1e-12))
        }
        let degenerate = try ProportionComparison(
            variant: Proportion(successes: 0, trials: 10),
            control: Proportion(successes: 0, trials: 10)
        )
        #expect(throws: StatisticsError(.zeroVariance)) { try degenerate.pooledZTestPValue() }
        let empty = try ProportionComparison(
            variant: Proportion(successes: 0, trials: 0),
            control: Proportion(successes: 0, trials: 10)
        )
        #expect(throws: StatisticsError(.tooFewUnits)) { try empty.pooledZTestPValue() }
    }
}
