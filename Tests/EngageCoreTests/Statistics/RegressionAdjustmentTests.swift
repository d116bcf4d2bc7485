import Foundation
import SeededRandom
import Testing
@testable import EngageCore

@Suite struct RegressionAdjustmentTests {
    /// Devices with a persistent propensity seen before and during the experiment; `history`
    /// is the share of devices with a pre-period.
    private static func arm(devices: Int, lift: Double, history: Double,
                            using generator: inout SplitMix64) -> AdjustedRatioMoments {
        var moments = AdjustedRatioMoments()
        for _ in 0..<devices {
            let propensity = Double.random(in: 0.02...0.6, using: &generator)
            func draws(_ count: Int, _ rate: Double) -> Int {
                (0..<count).filter { _ in Double.random(in: 0..<1, using: &generator) < rate }.count
            }
            let preDisplayed = Double.random(in: 0..<1, using: &generator) < history ? Int.random(in: 1...12, using: &generator) : 0
            let displayed = Int.random(in: 1...10, using: &generator)
            moments.add(numerator: Double(draws(displayed, min(1, propensity * lift))), denominator: Double(displayed),
                        preNumerator: Double(draws(preDisplayed, propensity)), preDenominator: Double(preDisplayed))
        }
        return moments
    }

    /// With a covariate that predicts the metric, the adjusted effect keeps its estimate close
    /// and its variance shrinks, which the comparison reports on each scale.
    @Test func aPredictiveCovariateReducesTheVariance() throws {
        var generator = SplitMix64(seed: 42)
        let control = Self.arm(devices: 3000, lift: 1, history: 0.8, using: &generator)
        let treatment = Self.arm(devices: 3000, lift: 1.05, history: 0.8, using: &generator)
        let comparison = RatioMetricComparison(control: control, treatment: treatment)
        let adjustment = try #require(comparison.regressionAdjustment)
        #expect(adjustment.isApplied && adjustment.theta > 0.1)
        for scale in EffectScale.allCases {
            let summary = try #require(comparison.outcome(scale).summary)
            let reduction = try #require(summary.varianceReduction)
            #expect(reduction > 0.1 && reduction < 1, "\(scale): \(reduction)")
        }
        let unadjusted = RatioMetricComparison(control: control.post, treatment: treatment.post)
        #expect(unadjusted.regressionAdjustment == nil && unadjusted.absolute.summary?.varianceReduction == nil)
        let adjustedWidth = try #require(comparison.absolute.summary).sequential.interval.width
        let plainWidth = try #require(unadjusted.absolute.summary).sequential.interval.width
        #expect(adjustedWidth < plainWidth)
    }

    /// With a denominator of 1 everywhere, the adjusted ratio is gbstats' mean CUPED, whatever
    /// way the moments were gathered.
    @Test func unitDenominatorsAreTheMeanMetric() {
        var generator = SplitMix64(seed: 9)
        var perDevice = [AdjustedRatioMoments(), AdjustedRatioMoments()]
        var sums = [[Double]](repeating: [0, 0, 0, 0, 0], count: 2)
        for arm in 0..<2 {
            for _ in 0..<200 {
                let c = Double(Int.random(in: 0...8, using: &generator))
                let y = (c * 0.7 + Double(Int.random(in: 0...4, using: &generator))).rounded()
                perDevice[arm].add(numerator: y, denominator: 1, covariate: c)
                sums[arm][0] += y; sums[arm][1] += y * y; sums[arm][2] += c; sums[arm][3] += c * c; sums[arm][4] += y * c
            }
        }
        let fromSums = sums.map {
            AdjustedRatioMoments.meanMetric(devices: 200, sum: $0[0], sumOfSquares: $0[1], covariateSum: $0[2],
                                            covariateSquares: $0[3], crossProducts: $0[4])
        }
        #expect(fromSums == perDevice)
        let adjustment = RegressionAdjustment(control: perDevice[0], treatment: perDevice[1])
        // theta = pooled cov(y, c) / var(c), by hand.
        let n = 400.0
        let sy = sums[0][0] + sums[1][0], sc = sums[0][2] + sums[1][2]
        let cov = (sums[0][4] + sums[1][4] - sy * sc / n) / (n - 1)
        let varC = (sums[0][3] + sums[1][3] - sc * sc / n) / (n - 1)
        #expect(abs(adjustment.theta - cov / varC) <= 1e-13 * abs(cov / varC))
        #expect(abs(adjustment.control.mean - (sums[0][0] / 200 - adjustment.theta * sums[0][2] / 200)) <= 1e-13)
    }

    /// gbstats falls back to the unadjusted statistics when the pooled covariate is constant;
    /// engage also does when an arm has no history at all.
    @Test func fallsBackWithoutAUsableCovariate() {
        var generator = SplitMix64(seed: 5)
        let withHistory = Self.arm(devices: 100, lift: 1, history: 1, using: &generator)
        let withoutHistory = Self.arm(devices: 100, lift: 1, history: 0, using: &generator)
        for (control, treatment) in [(withoutHistory, withoutHistory), (withHistory, withoutHistory),
                                     (withoutHistory, withHistory)] {
            let adjustment = RegressionAdjustment(control: control, treatment: treatment)
            #expect(!adjustment.isApplied)
            #expect(adjustment.control == ArmEstimate(control.post) && adjustment.treatment == ArmEstimate(treatment.post))
            let summary = RatioMetricComparison(control: control, treatment: treatment).relative.summary
            #expect(summary?.varianceReduction == 0)
        }
    }

    /// Moments add: two halves pooled are the whole.
    @Test func momentsAdd() {
        var generator = SplitMix64(seed: 11)
        let a = Self.arm(devices: 50, lift: 1, history: 0.5, using: &generator)
        let b = Self.arm(devices: 70, lift: 1, history: 0.5, using: &generator)
        let pooled = a + b
        #expect(pooled.post.devices == 120 && pooled.pre.devices == 120)
        #expect(pooled.post.numeratorSum == a.post.numeratorSum + b.post.numeratorSum)
        #expect(pooled.denominatorTimesPreDenominator == a.denominatorTimesPreDenominator + b.denominatorTimesPreDenominator)
    }
}
