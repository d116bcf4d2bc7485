import Foundation
import SeededRandom
import Testing
@testable import EngageCore

/// Properties of the effect scales, the corrections and the "not enough data" states that no
/// single reference vector shows.
@Suite struct TreatmentEffectTests {
    /// Random arms of a ratio metric: devices with Poisson-like displays and a per-device rate.
    private static func arm(devices: Int, rate: Double, using generator: inout SplitMix64) -> RatioMoments {
        var moments = RatioMoments()
        for _ in 0..<devices {
            let displayed = Int.random(in: 1...9, using: &generator)
            let propensity = min(1, rate * Double.random(in: 0.2...1.8, using: &generator))
            let opened = (0..<displayed).filter { _ in Double.random(in: 0..<1, using: &generator) < propensity }.count
            moments.add(numerator: Double(opened), denominator: Double(displayed))
        }
        return moments
    }

    /// The p-value shown belongs to the interval shown: p < alpha exactly when the interval
    /// excludes 0, raw or Bonferroni-corrected, fixed-horizon or sequential, on every scale.
    @Test func pValueAgreesWithItsInterval() throws {
        var generator = SplitMix64(seed: 15)
        var excluded = 0
        for trial in 0..<300 {
            let control = Self.arm(devices: Int.random(in: 5...400, using: &generator), rate: 0.3, using: &generator)
            let treatment = Self.arm(devices: Int.random(in: 5...400, using: &generator),
                                     rate: 0.3 * Double.random(in: 0.8...1.3, using: &generator), using: &generator)
            for scale in EffectScale.allCases {
                let effect = try TreatmentEffect(control: ArmEstimate(control), treatment: ArmEstimate(treatment), scale: scale)
                for correction in [MultipleTesting.none, .bonferroni(comparisons: 3)] {
                    for test in [effect.fixedHorizon(alpha: 0.05, correction: correction),
                                 effect.sequential(alpha: 0.05, tuning: 300, correction: correction)] {
                        let excludesZero = !test.interval.contains(0)
                        if excludesZero { excluded += 1 }
                        // Ties within rounding of the boundary are not a disagreement.
                        let boundary = min(abs(test.interval.lower), abs(test.interval.upper)) <= 1e-12 * test.interval.width
                        #expect(boundary || (test.pValue < 0.05) == excludesZero,
                                "trial \(trial) \(scale) \(correction.label): p \(test.pValue) \(test.interval)")
                        #expect(test.pValue >= test.unadjustedPValue && test.pValue <= 1)
                    }
                }
            }
        }
        #expect(excluded > 100, "the sample should hold significant effects too")
    }

    /// The Bonferroni interval is the raw interval at alpha / k, and p the raw p times k.
    @Test func bonferroniIsTheRawTestAtTheCorrectedLevel() throws {
        var generator = SplitMix64(seed: 3)
        let control = Self.arm(devices: 500, rate: 0.3, using: &generator)
        let treatment = Self.arm(devices: 500, rate: 0.33, using: &generator)
        let effect = try TreatmentEffect(control: ArmEstimate(control), treatment: ArmEstimate(treatment), scale: .relative)
        let corrected = effect.fixedHorizon(alpha: 0.05, correction: .bonferroni(comparisons: 2))
        let raw = effect.fixedHorizon(alpha: 0.025)
        #expect(corrected.interval == raw.interval)
        #expect(corrected.pValue == min(1, 2 * raw.pValue))
        #expect(corrected.unadjustedPValue == raw.pValue)
        #expect(corrected.interval.width > effect.fixedHorizon(alpha: 0.05).interval.width)
        #expect(corrected.correction.label == "bonferroni x2")
        let sequential = effect.sequential(alpha: 0.05, tuning: 1000, correction: .bonferroni(comparisons: 2))
        #expect(sequential.interval == effect.sequential(alpha: 0.025, tuning: 1000).interval)
    }

    /// The log ratio reads back as a relative lift that never passes -100%, and sits on the
    /// same side of 0 as the relative estimate.
    @Test func logRatioReadsBackAsARelativeLift() throws {
        var generator = SplitMix64(seed: 7)
        var compared = 0
        for _ in 0..<100 {
            let control = Self.arm(devices: Int.random(in: 2...30, using: &generator), rate: 0.1, using: &generator)
            let treatment = Self.arm(devices: Int.random(in: 2...30, using: &generator), rate: 0.03, using: &generator)
            guard let log = try? TreatmentEffect(control: ArmEstimate(control), treatment: ArmEstimate(treatment), scale: .logRatio),
                  let relative = try? TreatmentEffect(control: ArmEstimate(control), treatment: ArmEstimate(treatment), scale: .relative)
            else { continue }
            compared += 1
            let interval = log.relativeLift(log.sequential(tuning: 100).interval)
            #expect(interval.lower > -1 && interval.upper > interval.lower)
            #expect(abs(log.relativeLift(log.estimate) - relative.estimate) <= 1e-12 * max(1, abs(relative.estimate)))
        }
        // Small arms at 3% often have no success (no log ratio): enough rounds must remain.
        #expect(compared >= 40, "\(compared) of 100 rounds compared")
    }

    /// Each way gbstats gives up has its named state, on every scale, never a NaN.
    @Test func notEnoughDataIsNamed() {
        let healthy = RatioMoments(devices: 20, numeratorSum: 30, numeratorSquares: 70, denominatorSum: 100,
                                   denominatorSquares: 560, crossProducts: 180)
        let cases: [(RatioMoments, RatioMoments, StatisticsError.Code)] = [
            (RatioMoments(devices: 1, numeratorSum: 2, numeratorSquares: 4, denominatorSum: 5, denominatorSquares: 25,
                          crossProducts: 10), healthy, .tooFewUnits),
            (healthy, RatioMoments(), .tooFewUnits),
            (RatioMoments(devices: 3, denominatorSum: 12, denominatorSquares: 50), healthy, .zeroBaseline),
            (RatioMoments(devices: 20), healthy, .zeroBaseline),
            (healthy, RatioMoments(devices: 3, denominatorSum: 11, denominatorSquares: 45), .zeroVariance),
            // Every device at the same rate: the delta-method variance cancels to rounding noise.
            (healthy, RatioMoments(devices: 4, numeratorSum: 7, numeratorSquares: 15, denominatorSum: 14,
                                   denominatorSquares: 60, crossProducts: 30), .zeroVariance),
        ]
        for (control, treatment, code) in cases {
            let comparison = RatioMetricComparison(control: control, treatment: treatment)
            for scale in EffectScale.allCases {
                #expect(comparison.outcome(scale) == .notEnoughData(StatisticsError(code)), "\(scale) \(code)")
            }
            #expect(!comparison.control.variance.isNaN && !comparison.treatment.variance.isNaN)
        }
    }

    /// A regression-adjusted mean can fall to 0 or below; the log ratio says so instead of
    /// taking its logarithm.
    @Test func logRatioOfANonPositiveMeanIsNamed() {
        let control = ArmEstimate(devices: 10, mean: 0.2, unadjustedMean: 0.2, variance: 0.01)
        let treatment = ArmEstimate(devices: 10, mean: -0.01, unadjustedMean: 0.05, variance: 0.01, centredMean: -0.01)
        #expect(throws: StatisticsError(.nonPositiveMean)) {
            try TreatmentEffect(control: control, treatment: treatment, scale: .logRatio)
        }
        #expect((try? TreatmentEffect(control: control, treatment: treatment, scale: .absolute)) != nil)
    }

    /// The lower-is-better reading of the posterior swaps chance to win and the two risks, and
    /// the risks differ by the mean (E[max(d, 0)] - E[max(-d, 0)] = E[d]).
    @Test func posteriorIdentities() {
        for (mean, sd) in [(0.3, 0.1), (-0.02, 0.05), (4.0, 0.5), (-4.0, 0.5), (0.0, 1.0), (-1.0, 0.45)] {
            let better = EffectPosterior(mean: mean, standardDeviation: sd)
            let worse = EffectPosterior(mean: mean, standardDeviation: sd, higherIsBetter: false)
            #expect(abs(better.chanceToWin + worse.chanceToWin - 1) <= 1e-15)
            #expect(better.controlRisk == worse.treatmentRisk && better.treatmentRisk == worse.controlRisk)
            #expect(abs(better.controlRisk - better.treatmentRisk - mean) <= 1e-14 * max(1, abs(mean)))
            #expect(better.controlRisk >= 0 && better.treatmentRisk >= 0)
        }
        // Continuous where the two ways of computing the loss meet.
        let below = EffectPosterior.positivePartMean(-2.0.nextDown)
        let at = EffectPosterior.positivePartMean(-2)
        #expect(abs(below - at) <= 1e-14 * at)
    }
}
