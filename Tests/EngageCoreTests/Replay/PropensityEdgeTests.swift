import Testing
@testable import EngageCore

/// Inverse-propensity estimates where the log makes them unusual: an IPS above 1, an arm whose
/// tags carry two probabilities, and no push whose own arm made the replayed choice.
@Suite struct PropensityEdgeTests {
    static func displayed(opened: Bool) -> FunnelCounts {
        var stages: [FunnelStage: Int] = [.notifications: 1, .delivered: 1, .displayed: 1]
        if opened { stages[.opened] = 1 }
        return FunnelCounts(stages)
    }

    /// Arms full (treatment) and none (control) at 0.5 each; replaying full, which only the
    /// treatment's strategy chooses alike (P = 0.5). Each notification from a device of its own.
    static func tally(treatmentOpened: Int, controlShown: Int, controlProbability: Double = 0.5) -> PropensityTally {
        var tally = PropensityTally(experimentID: "e")
        for _ in 0..<treatmentOpened {
            tally.noteDelivery(arm: "treatment", probability: 0.5, strategy: .full)
            tally.add(arm: "treatment", mask: StrategyMask([.full]), counts: displayed(opened: true))
            tally.endDevice()
        }
        for index in 0..<controlShown {
            tally.noteDelivery(arm: "control", probability: index == 0 ? 0.5 : controlProbability, strategy: .noAttachment)
            tally.add(arm: "control", mask: StrategyMask([.full]), counts: displayed(opened: false))
            tally.endDevice()
        }
        return tally
    }

    /// 8 matched pushes, all opened, weigh 2 each over 10: IPS = 1.6, its half-width 0.496. Its
    /// interval was clamped at 1 as a rate's: [1.104, 1], leaving the estimate out.
    @Test func anIPSAboveOneKeepsItsIntervalAroundIt() throws {
        let estimate = try #require(Self.tally(treatmentOpened: 8, controlShown: 2).estimate(.open, confidence: 0.95))
        #expect(abs(estimate.ips - 1.6) < 1e-12)
        let half = 1.959963984540054 * (0.064).squareRoot()
        #expect(abs(estimate.ipsInterval.lower - (1.6 - half)) < 1e-9)
        #expect(abs(estimate.ipsInterval.upper - (1.6 + half)) < 1e-9)
        #expect(estimate.ipsInterval.lower <= estimate.ips && estimate.ips <= estimate.ipsInterval.upper)
        // SNIPS stays a rate: 8 / 8.
        #expect(estimate.snips == 1)
    }

    @Test func anArmLoggedWithTwoProbabilitiesGetsNoEstimate() {
        let tally = Self.tally(treatmentOpened: 3, controlShown: 3, controlProbability: 0.25)
        #expect(tally.problem == "arm control was logged with more than one probability")
        #expect(tally.estimate(.open, confidence: 0.95) == nil)
    }

    /// Supported pushes but none of the arm that chooses alike: no estimate, not "0% [0, 0]".
    @Test func noMatchedPushIsNoEstimate() {
        var tally = Self.tally(treatmentOpened: 0, controlShown: 5)
        tally.noteDelivery(arm: "treatment", probability: 0.5, strategy: .full)
        #expect(tally.problem == nil)
        #expect(tally.estimate(.open, confidence: 0.95) == nil)
    }

    /// Pushes without media: every strategy leaves them plain, so both arms would have made the
    /// replayed choice (P = 1). With arm b unseen in the counted window, P was 0.5 and each push
    /// weighed 2: IPS 1.0 for a rate of 0.5. Its definition gives it back its share.
    @Test func anArmWithoutCountedDeliveriesKeepsItsShareOfThePropensity() throws {
        var tally = PropensityTally(experimentID: "e")
        for index in 0..<10 {
            tally.noteDelivery(arm: "a", probability: 0.5, strategy: .full)
            tally.add(arm: "a", mask: StrategyMask([.full, .noAttachment]), counts: Self.displayed(opened: index < 5))
            tally.endDevice()
        }
        #expect(try #require(tally.estimate(.open, confidence: 0.95)).ips == 1.0)
        tally.addDesignArm(name: "b", probability: 0.5, strategy: .noAttachment)
        tally.addDesignArm(name: "a", probability: 0.9, strategy: .thumbnail)
        let estimate = try #require(tally.estimate(.open, confidence: 0.95))
        #expect(estimate.ips == 0.5)
        #expect(estimate.snips == 0.5)
        // A logged arm stays as logged.
        #expect(tally.arms["a"]?.probability == 0.5 && tally.arms["a"]?.strategy == .full)
        #expect(tally.arms["b"]?.probability == 0.5 && tally.arms["b"]?.strategy == .noAttachment)
    }
}
