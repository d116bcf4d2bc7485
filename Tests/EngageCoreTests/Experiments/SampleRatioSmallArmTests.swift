import EngageCore
import Testing

/// The sample ratio check waited until EVERY arm expected 5 devices. One arm of small weight
/// (0.2% here) then kept the check silent over thousands of devices, however broken the split
/// of the others: 1,500 against 500 devices in two arms of equal weight (chi-square p = 2e-126
/// with the small arm pooled into the first of the two, `python3 -c "from scipy.stats import
/// chisquare; print(chisquare([1600, 500], f_exp=[2100 * .501, 2100 * .499]).pvalue)"` gives
/// 2.277803795653513e-126) shipped an arm from a broken assignment, where main before the
/// 5-device rule said invalid_sample_ratio_mismatch.
@Suite struct SampleRatioSmallArmTests {
    /// 200 devices in a 1% arm of 400: the arm expects 4, so it was pooled into the other arm,
    /// one cell tested nothing, and the experiment shipped from a broken assignment.
    @Test func aSmallArmFarOverItsShareIsAMismatch() throws {
        var definition = ExperimentDefinition.sample(arms: [
            ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.99, isControl: true),
            ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.01)])
        definition.analysis.minimumDevicesPerArm = 100
        #expect(definition.problems.isEmpty)
        var tallies = ExperimentTallies(definition: definition)
        for (arm, opened) in [("control", 20), ("treatment", 120)] {
            for i in 0..<200 {
                tallies.record(arm: arm, device: "\(arm)-\(i)", FunnelCounts([
                    .notifications: 1, .delivered: 1, .displayed: 1, .richDisplayed: 1, .opened: i < opened ? 1 : 0]))
            }
        }
        let p = try #require(SampleRatioMismatch.decisionPValue(observed: [200, 200], weights: [0.99, 0.01]))
        #expect(p < 1e-250, "\(p)")
        let result = ExperimentAnalysis.run(definition: definition, tallies: tallies, now: Self.now)
        #expect(result.hasSampleRatioMismatch)
        #expect(result.decision == .invalidSampleRatioMismatch, "\(result.decision): \(result.rationale)")
    }

    static let now = Timestamp(rfc3339: "2026-03-10T12:00:00Z")!

    @Test func aSmallArmDoesNotSilenceTheCheckOfTheOthers() throws {
        var definition = ExperimentDefinition.sample(arms: [
            ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.499, isControl: true),
            ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.499),
            ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.002)])
        definition.analysis.minimumDevicesPerArm = 100
        #expect(definition.problems.isEmpty)
        var tallies = ExperimentTallies(definition: definition)
        for (arm, devices, opened) in [("control", 1_500, 150), ("treatment", 500, 100), ("poster", 100, 10)] {
            for i in 0..<devices {
                tallies.record(arm: arm, device: "\(arm)-\(i)", FunnelCounts([
                    .notifications: 1, .delivered: 1, .displayed: 1, .richDisplayed: 1, .opened: i < opened ? 1 : 0]))
            }
        }
        let result = ExperimentAnalysis.run(definition: definition, tallies: tallies, now: Self.now)
        #expect(result.hasSampleRatioMismatch)
        #expect(result.decision == .invalidSampleRatioMismatch, "\(result.decision): \(result.rationale)")
    }

    /// Pooling keeps the first look of the 5-device rule quiet: 2 devices, both in a 10% arm,
    /// leave every arm in the pool, which tests nothing. A pool that still expects fewer than 5
    /// beside a single arm that expects enough is tested against it exactly (scipy's
    /// `binomtest(2, 20, 0.1)` and `binomtest(9, 40, 0.1)`).
    @Test func pooledCellsNeedTwoToTest() throws {
        #expect(SampleRatioMismatch.decisionPValue(observed: [0, 2], weights: [0.9, 0.1]) == nil)
        #expect(SampleRatioMismatch.decisionPValue(observed: [18, 2], weights: [0.9, 0.1]) == 1)
        let over = try #require(SampleRatioMismatch.decisionPValue(observed: [31, 9], weights: [0.9, 0.1]))
        #expect(abs(over / 0.015495305414444483 - 1) < 1e-9, "\(over)")
        // Every arm expecting 5: the plain test, gbstats' figure.
        #expect(SampleRatioMismatch.decisionPValue(observed: [40, 10], weights: [0.5, 0.5])
                == SampleRatioMismatch.pValue(observed: [40, 10], weights: [0.5, 0.5]))
        // The small arm pooled with the other arm of smallest weight (the first of equals).
        let pooled = SampleRatioMismatch.decisionPValue(observed: [1_500, 500, 100], weights: [0.499, 0.499, 0.002])
        #expect(pooled.map { abs($0 / 2.277803795653513e-126 - 1) < 1e-9 } == true, "\(String(describing: pooled))")
        // Several small arms that together expect 5 make a cell of their own.
        let several = try #require(SampleRatioMismatch.decisionPValue(observed: [500, 480, 3, 3],
                                                                      weights: [0.497, 0.497, 0.003, 0.003]))
        let cells = SampleRatioMismatch.pValue(observed: [500, 480, 6], weights: [0.497, 0.497, 0.006])
        #expect(abs(several / cells - 1) < 1e-12, "\(several) \(cells)")
    }
}
