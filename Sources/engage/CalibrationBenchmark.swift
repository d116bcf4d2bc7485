import EngageCore
import Foundation
import Runtime

/// `engage bench calibration`: simulated A/A experiments analysed every hour, the false ship and
/// false guardrail block rates counted per side with their Clopper-Pearson 95% upper bounds
/// (`ExperimentCalibration`). Exit status 1 when a bound exceeds alpha / 2.
enum CalibrationBenchmark {
    static let experiments = Option("experiments", value: "n", help: "A/A experiments per arm count.", default: 2_000,
                                    validate: .range(1...1_000_000))
    static let devices = Option("devices", value: "n", help: "Devices per experiment; N* is set to a comparison's devices.",
                                default: 1_000, validate: .range(4...10_000_000))
    static let looks = Option("looks", value: "n", help: "Hourly analyses per experiment.", default: 24, validate: .range(1...10_000))
    static let arms = Option("arms", value: "list", help: "Arm counts to run, comma separated (control included).", default: "2,3")
    static let spread = Option.propensitySpread(default: 1.0)
    static let workers = Option("workers", value: "n", help: "Concurrent simulation tasks.", default: 2, validate: .range(1...64))

    static let definition = Command(
        name: "calibration",
        abstract: "Count false ship and false guardrail block decisions in simulated A/A experiments.",
        options: [experiments, devices, looks, arms, spread, workers],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let entries = arguments[arms].split(separator: ",", omittingEmptySubsequences: false)
        let armCounts = entries.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        // Each arm needs a device (ExperimentCalibration's precondition): checked here, so that
        // --devices 4 --arms 5 is a usage error rather than a trap; an entry that does not read
        // (2,x) is refused, not skipped.
        guard !armCounts.isEmpty, armCounts.count == entries.count,
              armCounts.allSatisfy({ $0 >= 2 && $0 <= min(10, arguments[devices]) }) else {
            throw arguments.usageError(.invalidValue,
                                       "--arms must list arm counts between 2 and 10, such as 2,3, none above --devices (\(arguments[devices]))")
        }
        var calibrated = true
        for armCount in armCounts {
            let calibration = ExperimentCalibration(arms: armCount, devices: arguments[devices], looks: arguments[looks],
                                                    propensity: DevicePropensity(spread: arguments[spread]))
            var stopwatch = Stopwatch()
            let summary = await calibration.run(experiments: arguments[experiments], workers: arguments[workers])
            calibrated = calibrated && summary.isCalibrated
            print("arms \(armCount), devices \(calibration.devices), N* \(calibration.tuning), looks \(calibration.looks), "
                + "spread \(calibration.propensity.spread): \(summary) [\(String(format: "%.1f", stopwatch.elapsed.seconds)) s]")
            stopwatch = Stopwatch()
        }
        if !calibrated { throw BenchCommand.BenchError("a false decision rate may exceed alpha / 2 (upper bound above it)") }
    }
}
