import Foundation
import Testing
@testable import EngageCore

@Suite struct DevicePropensityTests {
    static let start = TrafficSimulatorTests.start

    static func scenario(notifications: Int, devices: Int, spread: Double) -> SimulationScenario {
        TrafficSimulatorTests.scenario(notifications: notifications, devices: devices) {
            $0.propensity = DevicePropensity(spread: spread)
        }
    }

    // MARK: The device's rates

    @Test func aDevicesRatesStayValidAndNestedWhateverItsShift() {
        for category in SimulationScenario.standard.categories {
            for presentation in Presentation.allCases {
                let configured = category.rates(for: presentation)
                #expect(DevicePropensity.rates(configured, shift: 0) == configured)
                var previous = DevicePropensity.rates(configured, shift: -9)
                for step in -35...36 {
                    let rates = DevicePropensity.rates(configured, shift: Double(step) / 4)
                    #expect(rates.problem == nil, "\(category.name)/\(presentation) shift \(Double(step) / 4): \(rates)")
                    // A more engaged device expands, acts and opens at least as often.
                    #expect(rates.expanded >= previous.expanded && rates.actioned >= previous.actioned)
                    #expect(rates.opened >= previous.opened && rates.dismissed <= previous.dismissed)
                    previous = rates
                }
            }
        }
        // Rates of 0 and 1 stay put.
        let edges = EngagementRates(expanded: 1, actioned: 0, opened: 0, dismissed: 1)
        #expect(DevicePropensity.rates(edges, shift: 2.5) == edges)
    }

    /// The population's rates, against mpmath's quadrature (30 digits) of the same integrals:
    /// scripts/propensity-expectations.py.
    @Test func expectedRatesAreTheAverageOverTheNormalDistribution() {
        let propensity = DevicePropensity(spread: 1)
        let photo = propensity.expectedRates(EngagementRates(expanded: 0.10, actioned: 0.04, opened: 0.18,
                                                             dismissed: 0.25, replied: 0.01))
        let chatRich = propensity.expectedRates(SimulationScenario.standard.categories[1].rates(for: .rich))
        let expected: [(EngagementRates, [Double])] = [
            (photo, [0.13386965746758702, 0.077261631018176994, 0.21905812581516513, 0.23809203481244966,
                     0.038368174255327524]),
            (chatRich, [0.38306516270289679, 0.25809733510701577, 0.38945332076919491, 0.13755399492551735,
                        0.19404853587831973]),
        ]
        for (rates, reference) in expected {
            let computed = [rates.expanded, rates.actioned, rates.opened, rates.dismissed, rates.replied]
            for (value, want) in zip(computed, reference) {
                #expect(abs(value - want) <= 1e-12 * want, "\(value) vs \(want)")
            }
        }
        let configured = SimulationScenario.standard.categories[0].plain
        #expect(DevicePropensity.none.expectedRates(configured) == configured)
    }

    // MARK: The simulator

    @Test func eachDeviceKeepsOneShiftFromItsSeedAlone() throws {
        let small = try TrafficSimulator(scenario: Self.scenario(notifications: 10, devices: 300, spread: 0.8),
                                         seed: 42, start: Self.start)
        let large = try TrafficSimulator(scenario: Self.scenario(notifications: 5_000, devices: 600, spread: 0.8),
                                         seed: 42, start: Self.start)
        let other = try TrafficSimulator(scenario: Self.scenario(notifications: 10, devices: 300, spread: 0.8),
                                         seed: 43, start: Self.start)
        // The same device has the same shift whatever else the scenario holds; another seed differs.
        #expect(small.devices.map(\.propensity) == large.devices.prefix(300).map(\.propensity))
        #expect(small.devices.map(\.propensity) != other.devices.map(\.propensity))
        // Shifts are spread * N(0, 1): mean near 0, standard deviation near 0.8 over 600 devices.
        let shifts = large.devices.map(\.propensity)
        let mean = shifts.reduce(0, +) / 600
        let sd = (shifts.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / 599).squareRoot()
        #expect(abs(mean) < 4 * 0.8 / 600.0.squareRoot())
        #expect(abs(sd - 0.8) < 4 * 0.8 / 1_200.0.squareRoot())
        // Nothing else about the devices moves: network and speed are those drawn without propensity.
        let without = try TrafficSimulator(scenario: Self.scenario(notifications: 10, devices: 300, spread: 0),
                                           seed: 42, start: Self.start)
        #expect(without.devices.allSatisfy { $0.propensity == 0 })
        #expect(without.devices.map(\.profile) == small.devices.map(\.profile))
        #expect(without.devices.map(\.arm) == small.devices.map(\.arm))
    }

    /// With one notification per device the notifications are independent, so every population
    /// rate lies within 4 standard errors of the realized one; the configured rates (a device
    /// without propensity) are off by far more for the funnel's deeper steps.
    @Test func realizedRatesConvergeToThePopulationsRates() throws {
        let scenario = Self.scenario(notifications: 30_000, devices: 30_000, spread: 1)
        let (_, truth) = try TrafficSimulatorTests.run(scenario, seed: 2027, batchSize: 5_000)
        var compared = 0
        var farFromConfigured = 0
        for category in truth.categories {
            for presentation in Presentation.allCases {
                let tally = truth.realized(category: category.name, presentation: presentation)
                guard tally[.displayed] >= 500 else { continue }
                let expected = try #require(truth.expectedRates(category: category.name, presentation: presentation))
                let configured = category.rates(for: presentation)
                for stage in FunnelStage.engagements where expected[stage] > 0 {
                    let p = expected[stage]
                    let se = (p * (1 - p) / Double(tally[.displayed])).squareRoot()
                    #expect(abs(tally.rate(stage) - p) <= 4 * se,
                            "\(category.name)/\(presentation) \(stage.name): \(tally.rate(stage)) vs \(p)")
                    if abs(tally.rate(stage) - configured[stage]) > 6 * se { farFromConfigured += 1 }
                    compared += 1
                }
            }
        }
        #expect(compared >= 30)
        #expect(farFromConfigured >= 10)
        // The true difference and ratio follow from the population's rates.
        let rich = try #require(truth.expectedRates(category: "new_photo", presentation: .rich))
        let plain = try #require(truth.expectedRates(category: "new_photo", presentation: .plain))
        #expect(truth.expectedDifference(category: "new_photo", stage: .expanded) == rich.expanded - plain.expanded)
        #expect(truth.expectedRatio(category: "new_photo", stage: .expanded) == rich.expanded / plain.expanded)
        #expect(truth.expectedRatio(category: "promo_sale", stage: .replied) == nil)
        #expect(truth.expectedRates(category: "unknown", presentation: .rich) == nil)
    }

    /// The propensity persists: a device's expansion share over its first notifications predicts
    /// its share over its later ones, and does not without propensity.
    @Test func aDevicesEngagementIsCorrelatedOverTime() throws {
        func correlation(spread: Double) throws -> Double {
            let scenario = TrafficSimulatorTests.scenario(notifications: 60_000, devices: 1_500) {
                $0.propensity = DevicePropensity(spread: spread)
                $0.categories = [$0.categories[1]]
            }
            let (events, _) = try TrafficSimulatorTests.run(scenario, seed: 7, batchSize: 10_000)
            let end = Self.start.adding(microseconds: scenario.spanSeconds * 1_000_000)
            let middle = Self.start.adding(microseconds: (end.microsecondsSinceEpoch - Self.start.microsecondsSinceEpoch) / 2)
            var halves: [String: [(displayed: Double, expanded: Double)]] = [:]
            for event in events {
                let half = event.occurredAt < middle ? 0 : 1
                var counts = halves[event.deviceID] ?? [(0, 0), (0, 0)]
                if event.type == .displayed { counts[half].displayed += 1 }
                if event.type == .expanded { counts[half].expanded += 1 }
                halves[event.deviceID] = counts
            }
            let pairs = halves.values.filter { $0[0].displayed > 0 && $0[1].displayed > 0 }
                .map { ($0[0].expanded / $0[0].displayed, $0[1].expanded / $0[1].displayed) }
            let n = Double(pairs.count)
            let mx = pairs.map(\.0).reduce(0, +) / n, my = pairs.map(\.1).reduce(0, +) / n
            let sxy = pairs.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +)
            let sxx = pairs.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +)
            let syy = pairs.map { ($0.1 - my) * ($0.1 - my) }.reduce(0, +)
            return sxy / (sxx * syy).squareRoot()
        }
        // 20 notifications per half: with spread 1 the correlation is about 0.6, without about 0.
        #expect(try correlation(spread: 1) > 0.4)
        #expect(abs(try correlation(spread: 0)) < 0.1)
    }

    @Test func aNegativeOrInfiniteSpreadIsRejected() {
        for spread in [-0.1, Double.infinity, Double.nan] {
            #expect(throws: SimulationError(code: .invalidScenario,
                                            detail: "the propensity spread must be finite and not negative")) {
                try TrafficSimulator(scenario: Self.scenario(notifications: 1, devices: 1, spread: spread),
                                     seed: 1, start: Self.start)
            }
        }
    }
}
