import EngageCore
import Foundation
import Runtime

/// `engage bench cuped`: simulated experiments with a true lift on devices with a persistent
/// propensity, analysed every hour with and without CUPED (`ExperimentCupedSimulation`): how much
/// narrower the sequential interval gets and how many looks earlier the lift ships, as medians.
enum CupedBenchmark {
    static let experiments = Option("experiments", value: "n", help: "Simulated experiments.", default: 200,
                                    validate: .range(1...1_000_000))
    static let devices = Option("devices", value: "n", help: "Devices per experiment; N* is set to this number.",
                                default: 4_000, validate: .range(4...10_000_000))
    static let looks = Option("looks", value: "n", help: "Hourly analyses per experiment.", default: 48,
                              validate: .range(1...10_000))
    static let preLooks = Option("pre-hours", value: "n", help: "Hours of traffic in the pre-period.", default: 48,
                                 validate: .range(0...100_000))
    static let lift = Option("lift", value: "x", help: "True relative lift of the open rate.", default: 0.05)
    static let spread = Option.propensitySpread(default: 1.0)
    static let workers = Option("workers", value: "n", help: "Concurrent simulation tasks.", default: 2, validate: .range(1...64))

    static let definition = Command(
        name: "cuped",
        abstract: "Measure how much CUPED narrows the sequential interval and how many looks earlier a true lift ships.",
        options: [experiments, devices, looks, preLooks, lift, spread, workers],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        guard arguments[lift] > -1, arguments[lift] < 10 else {
            throw arguments.usageError(.invalidValue, "--lift must lie in (-1, 10)")
        }
        let simulation = ExperimentCupedSimulation(
            devices: arguments[devices], looks: arguments[looks], preLooks: arguments[preLooks], lift: arguments[lift],
            propensity: DevicePropensity(spread: arguments[spread]))
        let stopwatch = Stopwatch()
        let summary = await simulation.run(experiments: arguments[experiments], workers: arguments[workers])
        print("experiments \(summary.experiments), devices \(simulation.devices), N* \(simulation.tuning), "
            + "looks \(simulation.looks), pre-period hours \(simulation.preLooks), lift \(simulation.lift), "
            + "open rate \(simulation.openRate), spread \(simulation.propensity.spread): \(summary) "
            + "[\(String(format: "%.1f", stopwatch.elapsed.seconds)) s]")
    }
}
