import Foundation
import SeededRandom
import Testing
@testable import EngageCore

@Suite struct ClusteredComparisonTests {
    /// A device's counts in one bucket.
    struct Cell {
        let stratum: Int
        let arm: ComparisonArm
        let counts: Proportion
    }

    /// Moments built device by device, as a read model would, with the cross moments of every
    /// pair of buckets a device is in.
    static func clustered(strata names: [String], devices: [[Cell]]) throws -> ClusteredStratifiedComparison {
        var buckets = names.map { _ in (variant: DeviceMoments(), control: DeviceMoments()) }
        struct PairKey: Hashable { let first: BucketReference, second: BucketReference }
        var shared: [PairKey: DeviceCrossMoments] = [:]
        var order: [PairKey] = []
        func reference(_ cell: Cell) -> BucketReference { BucketReference(stratum: names[cell.stratum], arm: cell.arm) }
        for cells in devices {
            for cell in cells {
                if cell.arm == .variant { buckets[cell.stratum].variant.add(cell.counts) } else { buckets[cell.stratum].control.add(cell.counts) }
            }
            for i in cells.indices {
                for j in cells.indices where i < j {
                    let key = PairKey(first: reference(cells[i]), second: reference(cells[j]))
                    if shared[key] == nil { order.append(key) }
                    shared[key, default: DeviceCrossMoments()].add(first: cells[i].counts, second: cells[j].counts)
                }
            }
        }
        return try ClusteredStratifiedComparison(
            strata: names.indices.map { ClusteredStratum(name: names[$0], variant: buckets[$0].variant, control: buckets[$0].control) },
            sharedDevices: order.map { SharedDeviceMoments(first: $0.first, second: $0.second, moments: shared[$0]!) }
        )
    }

    static func clustered(_ vector: ClusteredDeviceFile.Case) throws -> ClusteredStratifiedComparison {
        try clustered(strata: vector.strata, devices: vector.devices.map { cells in
            try cells.map { Cell(stratum: $0[0], arm: $0[1] == 0 ? .variant : .control, counts: try Proportion(successes: $0[2], trials: $0[3])) }
        })
    }

    @Test func matchesClusterRobustOLSOnRawDevices() throws {
        let file = try decodeFixture(ClusteredDeviceFile.self, from: ClusteredDeviceVectors.json)
        var parity = Parity()
        for vector in file.cases {
            let comparison = try Self.clustered(vector)
            for bucket in vector.buckets {
                let stratum = try #require(comparison.strata.first { $0.name == bucket.stratum })
                let moments = bucket.arm == "variant" ? stratum.variant : stratum.control
                parity.check("rate", moments.rate, bucket.rate, relative: 1e-13, vector.name)
                parity.check("Var(rate)", moments.clusteredRateVariance, bucket.clusteredVariance, relative: 1e-10, vector.name)
                parity.check("binomial Var(rate)", moments.binomialRateVariance, bucket.binomialVariance, relative: 1e-12, vector.name)
            }
            for expected in vector.strataEffects {
                let stratum = try #require(comparison.comparison(in: expected.stratum))
                let difference = try stratum.difference(confidence: file.confidence)
                parity.check("Var(p1 - p2)", difference.variance, expected.differenceVariance, relative: 1e-10, vector.name)
                parity.check("binomial Var(p1 - p2)", difference.binomialVariance, expected.differenceBinomialVariance, relative: 1e-12, vector.name)
                if let logRatioVariance = expected.logRatioVariance, let binomial = expected.logRatioBinomialVariance {
                    let ratio = try stratum.ratio(confidence: file.confidence)
                    parity.check("Var log(p1 / p2)", ratio.variance, logRatioVariance, relative: 1e-10, vector.name)
                    parity.check("binomial Var log(p1 / p2)", ratio.binomialVariance, binomial, relative: 1e-12, vector.name)
                    #expect(ratio.effect.relativeInterval.lower > -1)
                } else {
                    #expect(throws: StatisticsError.self) { try stratum.ratio() }
                }
            }
            let difference = try comparison.mantelHaenszelRiskDifference(confidence: file.confidence)
            parity.check("MH RD", difference.effect.estimate, vector.mhRd.estimate, relative: 1e-13, vector.name)
            parity.check("clustered Var(MH RD)", difference.variance, vector.mhRd.variance, relative: 1e-10, vector.name)
            parity.check("binomial Var(MH RD)", difference.binomialVariance, vector.mhRd.binomialVariance, relative: 1e-12, vector.name)
            let ratio = try comparison.mantelHaenszelRiskRatio(confidence: file.confidence)
            parity.check("MH RR", ratio.effect.estimate, vector.mhRr.estimate, relative: 1e-13, vector.name)
            parity.check("clustered Var(log MH RR)", ratio.variance, vector.mhRr.logVariance, relative: 1e-10, vector.name)
            parity.check("binomial Var(log MH RR)", ratio.binomialVariance, vector.mhRr.binomialLogVariance, relative: 1e-12, vector.name)
            // The binomial counterparts are the naive estimators' own variances.
            parity.check("binomial Var(MH RD) = GR", difference.binomialVariance,
                         try comparison.counts.mantelHaenszelRiskDifference().greenlandRobinsVariance, relative: 1e-12, vector.name)
            parity.check("binomial Var(log MH RR) = large strata", ratio.binomialVariance,
                         try comparison.counts.mantelHaenszelRiskRatio().largeStrataLogVariance, relative: 1e-12, vector.name)
            for (scale, expected) in [(ComparisonScale.difference, vector.homogeneity.difference), (.ratio, vector.homogeneity.ratio)] {
                if let expected {
                    let test = try comparison.homogeneityTest(scale)
                    parity.check("clustered Q \(scale)", test.test.statistic, expected.statistic, relative: 1e-9, vector.name)
                    #expect(test.test.degreesOfFreedom == Double(expected.degreesOfFreedom))
                    #expect(test.excluded.map(\.name) == expected.excluded)
                } else {
                    #expect(throws: StatisticsError(.tooFewStrata)) { try comparison.homogeneityTest(scale) }
                }
            }
        }
        print("device-clustered vectors, largest relative error:\n\(parity.summary)")
    }

    /// One notification per device: every clustered figure is the binomial one.
    static func assertReducesToBinomial(_ comparison: ClusteredStratifiedComparison, _ context: String) throws {
        for stratum in comparison.strata where stratum.variant.trials > 0 && stratum.control.trials > 0 {
            for moments in [stratum.variant, stratum.control] {
                #expect(matches(moments.clusteredRateVariance, moments.binomialRateVariance, relative: 1e-12), "\(context)")
            }
            let pair = try #require(comparison.comparison(in: stratum.name))
            let difference = try pair.difference()
            #expect(matches(difference.variance, difference.binomialVariance, relative: 1e-12), "\(context)")
            let wald = try pair.counts.binomialWaldDifference()
            #expect(matches(difference.effect.interval.lower, wald.interval.lower, relative: 1e-12), "\(context)")
            #expect(matches(difference.effect.pValue, wald.pValue, relative: 1e-10), "\(context)")
            if let katz = try? pair.counts.ratioEstimate(.katzLog) {
                let ratio = try pair.ratio()
                #expect(matches(ratio.designEffect, 1, relative: 1e-12), "\(context)")
                #expect(matches(ratio.effect.interval.lower, katz.interval.lower, relative: 1e-12), "\(context)")
                #expect(matches(ratio.effect.interval.upper, katz.interval.upper, relative: 1e-12), "\(context)")
                #expect(matches(ratio.effect.pValue, katz.pValue, relative: 1e-10), "\(context)")
            }
        }
        let difference = try comparison.mantelHaenszelRiskDifference()
        let naiveDifference = try comparison.counts.mantelHaenszelRiskDifference()
        #expect(matches(difference.variance, naiveDifference.greenlandRobinsVariance, relative: 1e-12), "\(context)")
        #expect(matches(difference.effect.interval.upper, try naiveDifference.greenlandRobinsEstimate().interval.upper, relative: 1e-12), "\(context)")
        let ratio = try comparison.mantelHaenszelRiskRatio()
        let naiveRatio = try comparison.counts.mantelHaenszelRiskRatio()
        #expect(matches(ratio.variance, naiveRatio.largeStrataLogVariance, relative: 1e-12), "\(context)")
        #expect(matches(ratio.effect.interval.lower, try naiveRatio.largeStrataEstimate().interval.lower, relative: 1e-12), "\(context)")
        #expect(matches(ratio.designEffect, 1, relative: 1e-12), "\(context)")
        // Cochran's Q with clustered variances is Cochran's Q, where no stratum needs the
        // zero-cell correction.
        if comparison.counts.included.allSatisfy({ StratumTable($0).hasZeroCell == false }), comparison.counts.included.count >= 2 {
            for scale in ComparisonScale.allCases {
                #expect(matches(try comparison.homogeneityTest(scale).test.statistic,
                                try comparison.counts.cochranQ(scale).test.statistic, relative: 1e-9), "\(context) \(scale)")
            }
        }
    }

    @Test func oneNotificationPerDeviceIsTheBinomialCase() throws {
        let file = try decodeFixture(ClusteredDeviceFile.self, from: ClusteredDeviceVectors.json)
        let vector = try #require(file.cases.first { $0.name == "one-notification-per-device" })
        try Self.assertReducesToBinomial(try Self.clustered(vector), vector.name)

        var generator = SplitMix64(seed: 2016)
        var reduced = 0
        for round in 0..<40 {
            let names = (0..<Int.random(in: 1...5, using: &generator)).map { "c\($0)" }
            let rates = names.map { _ in (Double.random(in: 0.02...0.6, using: &generator), Double.random(in: 0.02...0.6, using: &generator)) }
            let devices = try (0..<Int.random(in: 50...600, using: &generator)).map { _ -> [Cell] in
                let stratum = Int.random(in: 0..<names.count, using: &generator)
                let arm: ComparisonArm = Bool.random(using: &generator) ? .variant : .control
                let rate = arm == .variant ? rates[stratum].0 : rates[stratum].1
                let success = Double.random(in: 0..<1, using: &generator) < rate ? 1 : 0
                return [Cell(stratum: stratum, arm: arm, counts: try Proportion(successes: success, trials: 1))]
            }
            let comparison = try Self.clustered(strata: names, devices: devices)
            guard (try? comparison.mantelHaenszelRiskRatio()) != nil else { continue }
            try Self.assertReducesToBinomial(comparison, "round \(round)")
            reduced += 1
        }
        #expect(reduced >= 30, "\(reduced) of 40 rounds compared")
    }

    @Test func identicalNotificationsPerDeviceMultiplyTheVarianceByTheirNumber() throws {
        // Each device repeats one outcome k times: the intra-device correlation is 1, so the
        // design effect is k exactly.
        var generator = SplitMix64(seed: 10)
        for k in [1, 2, 5, 10] {
            var moments = DeviceMoments()
            for _ in 0..<500 {
                let success = Double.random(in: 0..<1, using: &generator) < 0.3 ? k : 0
                moments.add(try Proportion(successes: success, trials: k))
            }
            #expect(matches(try moments.designEffect(), Double(k), relative: 1e-12), "k=\(k)")
        }
    }

    @Test func incrementalUpdatesEqualARebuild() throws {
        var generator = SplitMix64(seed: 77)
        var counts: [(first: Proportion, second: Proportion)] = Array(repeating: (Proportion(summing: []), Proportion(summing: [])), count: 40)
        var first = DeviceMoments()
        var second = DeviceMoments()
        var cross = DeviceCrossMoments()
        for _ in 0..<3000 {
            let device = Int.random(in: 0..<counts.count, using: &generator)
            let old = counts[device]
            // A notification displayed in one bucket, perhaps engaged with, or (rarely) a reset.
            var new = old
            let bump = { (counts: Proportion, success: Bool) in
                try Proportion(successes: counts.successes + (success ? 1 : 0), trials: counts.trials + 1)
            }
            switch Int.random(in: 0..<10, using: &generator) {
            case 0: new = (Proportion(summing: []), old.second)
            case 1...5: new.first = try bump(old.first, Bool.random(using: &generator))
            default: new.second = try bump(old.second, Bool.random(using: &generator))
            }
            first.update(from: old.first, to: new.first)
            second.update(from: old.second, to: new.second)
            cross.update(from: old, to: new)
            counts[device] = new
        }
        var rebuiltCross = DeviceCrossMoments()
        for device in counts { rebuiltCross.add(first: device.first, second: device.second) }
        #expect(first == DeviceMoments(deviceCounts: counts.map(\.first)))
        #expect(second == DeviceMoments(deviceCounts: counts.map(\.second)))
        #expect(cross == rebuiltCross)
        #expect(first.devices == counts.filter { $0.first.trials > 0 }.count)
    }

    @Test func sharedDevicesBetweenArmsChangeTheVarianceOfTheDifference() throws {
        // The same devices on both sides, each with its own propensity: the positive covariance
        // between the arms narrows the difference's variance below the independent sum.
        var generator = SplitMix64(seed: 5)
        var devices: [[Cell]] = []
        for _ in 0..<300 {
            let propensity = Double.random(in: 0...0.8, using: &generator)
            let cells = try [ComparisonArm.variant, .control].map { arm in
                let trials = Int.random(in: 1...8, using: &generator)
                let successes = (0..<trials).filter { _ in Double.random(in: 0..<1, using: &generator) < propensity }.count
                return Cell(stratum: 0, arm: arm, counts: try Proportion(successes: successes, trials: trials))
            }
            devices.append(cells)
        }
        let withShared = try Self.clustered(strata: ["c"], devices: devices)
        let withoutShared = try ClusteredStratifiedComparison(strata: withShared.strata)
        let paired = try withShared.mantelHaenszelRiskDifference().variance
        let independent = try withoutShared.mantelHaenszelRiskDifference().variance
        #expect(paired < independent)
        #expect(matches(independent, withShared.strata[0].variant.clusteredRateVariance + withShared.strata[0].control.clusteredRateVariance, relative: 1e-12))
    }

    @Test func badMomentsAreRejected() throws {
        #expect(throws: StatisticsError(.invalidCounts)) {
            try DeviceMoments(devices: 2, successes: 5, trials: 4, successesSquared: 9, trialsSquared: 10, successesTimesTrials: 9)
        }
        #expect(throws: StatisticsError(.invalidCounts)) {
            try DeviceMoments(devices: 0, successes: 0, trials: 3, successesSquared: 0, trialsSquared: 9, successesTimesTrials: 0)
        }
        #expect(throws: StatisticsError(.invalidCounts)) {
            try DeviceCrossMoments(successesProduct: 4, firstSuccessesSecondTrials: 3, firstTrialsSecondSuccesses: 5, trialsProduct: 9)
        }
        let valid = try DeviceMoments(devices: 2, successes: 3, trials: 5, successesSquared: 5, trialsSquared: 13, successesTimesTrials: 8)
        #expect(valid == DeviceMoments(deviceCounts: [try Proportion(successes: 1, trials: 2), try Proportion(successes: 2, trials: 3)]))
        let stratum = ClusteredStratum(name: "a", variant: valid, control: valid)
        let pair = SharedDeviceMoments(first: BucketReference(stratum: "a", arm: .variant),
                                       second: BucketReference(stratum: "a", arm: .control), moments: DeviceCrossMoments())
        #expect(throws: StatisticsError(.invalidCounts)) { try ClusteredStratifiedComparison(strata: [stratum], sharedDevices: [pair, pair]) }
        #expect(throws: StatisticsError(.invalidCounts)) { try ClusteredStratifiedComparison(strata: [stratum, stratum]) }
        let unknown = SharedDeviceMoments(first: BucketReference(stratum: "b", arm: .variant),
                                          second: BucketReference(stratum: "a", arm: .control), moments: DeviceCrossMoments())
        #expect(throws: StatisticsError(.invalidCounts)) { try ClusteredStratifiedComparison(strata: [stratum], sharedDevices: [unknown]) }
        let itself = SharedDeviceMoments(first: BucketReference(stratum: "a", arm: .variant),
                                          second: BucketReference(stratum: "a", arm: .variant), moments: DeviceCrossMoments())
        #expect(throws: StatisticsError(.invalidCounts)) { try ClusteredStratifiedComparison(strata: [stratum], sharedDevices: [itself]) }
    }

    @Test func emptyStrataAreNotEnoughData() throws {
        let empty = try ClusteredStratifiedComparison(strata: [
            ClusteredStratum(name: "a", variant: DeviceMoments(), control: DeviceMoments(deviceCounts: [try Proportion(successes: 1, trials: 3)])),
        ])
        #expect(empty.excluded == [ExcludedStratum(name: "a", reason: .noVariantTrials)])
        #expect(throws: StatisticsError(.tooFewStrata)) { try empty.mantelHaenszelRiskDifference() }
        #expect(throws: StatisticsError(.tooFewStrata)) { try empty.mantelHaenszelRiskRatio() }
        #expect(throws: StatisticsError(.tooFewStrata)) { try empty.homogeneityTest(.ratio) }
        #expect(throws: StatisticsError(.tooFewUnits)) { try empty.comparison(in: "a")!.difference() }
        #expect(throws: StatisticsError(.zeroVariance)) { try DeviceMoments().designEffect() }
    }
}
