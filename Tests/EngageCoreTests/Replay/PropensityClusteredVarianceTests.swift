import Foundation
import SeededRandom
import Testing
@testable import EngageCore

/// The inverse-propensity intervals take the device as the unit, as arms are assigned per device:
/// the variances equal the cluster-robust sandwich computed device by device, and over simulated
/// experiments whose devices engage alike within themselves the 95% interval covers the truth
/// about 95% of the time (with notifications as the unit, it covered about 70%).
@Suite struct PropensityClusteredVarianceTests {
    struct Notification {
        var arm: String
        var mask: StrategyMask
        var opened: Bool
    }

    static let arms: [(name: String, probability: Double, strategy: AttachmentStrategy)] =
        [("a", 0.3, .full), ("b", 0.7, .noAttachment)]

    static func displayed(opened: Bool) -> FunnelCounts {
        var stages: [FunnelStage: Int] = [.notifications: 1, .delivered: 1, .displayed: 1]
        if opened { stages[.opened] = 1 }
        return FunnelCounts(stages)
    }

    static func tally(_ devices: [[Notification]]) -> PropensityTally {
        var tally = PropensityTally(experimentID: "e")
        for arm in arms { tally.noteDelivery(arm: arm.name, probability: arm.probability, strategy: arm.strategy) }
        for device in devices {
            for notification in device {
                tally.add(arm: notification.arm, mask: notification.mask, counts: displayed(opened: notification.opened))
            }
            tally.endDevice()
        }
        return tally
    }

    /// The published formulas, device by device: A_j = sum w y, N_j = supported notifications,
    /// C_j = sum w; Var(IPS) = sum (A_j - IPS N_j)^2 / N^2, Var(SNIPS) = sum (A_j - SNIPS C_j)^2 / W^2.
    static func reference(_ devices: [[Notification]]) -> (ips: Double, ipsVariance: Double, snips: Double, snipsVariance: Double) {
        var perDevice: [(a: Double, n: Double, c: Double)] = []
        for device in devices {
            var a = 0.0, n = 0.0, c = 0.0
            for notification in device {
                let propensity = arms.filter { notification.mask.contains($0.strategy) }.reduce(0) { $0 + $1.probability }
                guard propensity > 0 else { continue }
                let own = arms.first { $0.name == notification.arm }!
                let weight = notification.mask.contains(own.strategy) ? 1 / propensity : 0
                a += weight * (notification.opened ? 1 : 0)
                n += 1
                c += weight
            }
            perDevice.append((a, n, c))
        }
        let total = perDevice.reduce(0) { $0 + $1.n }, weights = perDevice.reduce(0) { $0 + $1.c }
        let sum = perDevice.reduce(0) { $0 + $1.a }
        let ips = sum / total, snips = sum / weights
        let ipsVariance = perDevice.reduce(0) { $0 + pow($1.a - ips * $1.n, 2) } / (total * total)
        let snipsVariance = perDevice.reduce(0) { $0 + pow($1.a - snips * $1.c, 2) } / (weights * weights)
        return (ips, ipsVariance, snips, snipsVariance)
    }

    static func halfWidth(_ interval: ConfidenceInterval) -> Double { (interval.upper - interval.lower) / 2 }

    @Test func theVariancesAreTheSandwichOverDevices() throws {
        var random = SplitMix64(seed: 19)
        let masks = [StrategyMask([.full]), StrategyMask([.noAttachment]), StrategyMask([.full, .noAttachment]), StrategyMask([.thumbnail])]
        var devices: [[Notification]] = []
        for _ in 0..<300 {
            let arm = Double.random(in: 0..<1, using: &random) < 0.3 ? "a" : "b"
            let propensity = Double.random(in: 0..<1, using: &random)
            devices.append((0..<Int.random(in: 1...8, using: &random)).map { _ in
                Notification(arm: arm, mask: masks.randomElement(using: &random)!, opened: Double.random(in: 0..<1, using: &random) < propensity)
            })
        }
        let estimate = try #require(Self.tally(devices).estimate(.open, confidence: 0.95))
        let reference = Self.reference(devices)
        let z = 1.959963984540054
        #expect(abs(estimate.ips - reference.ips) < 1e-12)
        #expect(abs(try #require(estimate.snips) - reference.snips) < 1e-12)
        // Intervals not cut at 0 or 1 here (rates well inside).
        #expect(abs(Self.halfWidth(estimate.ipsInterval) - z * reference.ipsVariance.squareRoot()) < 1e-9)
        #expect(abs(Self.halfWidth(try #require(estimate.snipsInterval)) - z * reference.snipsVariance.squareRoot()) < 1e-9)
        let snipsInterval = try #require(estimate.snipsInterval)
        #expect(estimate.ipsInterval.lower > 0 && snipsInterval.upper < 1)
    }

    /// 400 experiments of 150 devices with 8 notifications each; a device opens with 5% or 60%
    /// (half each), whatever its arm; arms full and none at 0.5; replaying full. The truth is
    /// the mean open rate, 32.5%.
    @Test func theIPSIntervalCoversTheTruthWithCorrelatedDevices() throws {
        var random = SplitMix64(seed: 7)
        let arms: [(String, Double, AttachmentStrategy)] = [("full", 0.5, .full), ("none", 0.5, .noAttachment)]
        var covered = 0, snipsCovered = 0
        let experiments = 400
        for _ in 0..<experiments {
            var tally = PropensityTally(experimentID: "e")
            for (name, probability, strategy) in arms { tally.noteDelivery(arm: name, probability: probability, strategy: strategy) }
            for _ in 0..<150 {
                let arm = Bool.random(using: &random) ? "full" : "none"
                let propensity = Bool.random(using: &random) ? 0.05 : 0.6
                for _ in 0..<8 {
                    tally.add(arm: arm, mask: StrategyMask([.full]),
                              counts: Self.displayed(opened: Double.random(in: 0..<1, using: &random) < propensity))
                }
                tally.endDevice()
            }
            let estimate = try #require(tally.estimate(.open, confidence: 0.95))
            if estimate.ipsInterval.lower <= 0.325 && 0.325 <= estimate.ipsInterval.upper { covered += 1 }
            if let interval = estimate.snipsInterval, interval.lower <= 0.325 && 0.325 <= interval.upper { snipsCovered += 1 }
        }
        let coverage = Double(covered) / Double(experiments), snipsCoverage = Double(snipsCovered) / Double(experiments)
        #expect(coverage >= 0.92 && coverage <= 0.98, "IPS coverage \(coverage)")
        #expect(snipsCoverage >= 0.92 && snipsCoverage <= 0.98, "SNIPS coverage \(snipsCoverage)")
    }
}
