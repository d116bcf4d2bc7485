import EngageCore
import Foundation
import Runtime

/// `engage bench report-coverage`: how often the report's 95% intervals cover the simulator's
/// truth with a strong per-device propensity, with the device as the unit and with notifications
/// as the unit (`ReportCoverageStudy`). Exit status 1 when a device-unit coverage is below 93%.
enum ReportCoverageBenchmark {
    static let datasets = Option("datasets", value: "n", help: "Simulated datasets.", default: 1_000, validate: .range(1...1_000_000))
    static let devices = Option("devices", value: "n", help: "Devices per dataset.", default: 300, validate: .range(2...1_000_000))
    static let notifications = Option("notifications", value: "n", help: "Notifications per device (over 4 categories).",
                                      default: 40, validate: .range(1...100_000))
    static let spread = Option.propensitySpread(default: 1.5)
    static let seed = Option("seed", value: "n", help: "Seed of the first dataset.", default: 16, validate: .range(0...Int.max))

    static let definition = Command(
        name: "report-coverage",
        abstract: "Measure the coverage of the report's intervals over simulated datasets with a per-device propensity.",
        options: [datasets, devices, notifications, spread, seed],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let study = ReportCoverageStudy(devices: arguments[devices], notificationsPerDevice: arguments[notifications],
                                        propensity: DevicePropensity(spread: arguments[spread]))
        let stopwatch = Stopwatch()
        let results = study.run(datasets: arguments[datasets], seed: UInt64(arguments[seed]))
        print("datasets \(arguments[datasets]), devices \(study.devices), notifications per device \(study.notificationsPerDevice), "
            + "spread \(study.propensity.spread) [\(String(format: "%.1f", stopwatch.elapsed.seconds)) s]")
        print("metric      deff  | device: diff   ratio  adj.diff adj.ratio | categories apart: adj.diff adj.ratio "
            + "| naive: diff   ratio  adj.diff adj.ratio")
        var covered = true
        func percent(_ coverage: ReportCoverageStudy.Coverage) -> String {
            coverage.intervals == 0 ? "     —" : String(format: "%5.1f%%", 100 * coverage.rate)
        }
        for result in results {
            let device = [result.deviceDifference, result.deviceRatio, result.deviceAdjustedDifference, result.deviceAdjustedRatio]
            let apart = [result.separateAdjustedDifference, result.separateAdjustedRatio]
            let naive = [result.naiveDifference, result.naiveRatio, result.naiveAdjustedDifference, result.naiveAdjustedRatio]
            covered = covered && device.allSatisfy { $0.intervals == 0 || $0.rate >= 0.93 }
            print(result.metric.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
                + String(format: " %5.2f |        ", result.meanDesignEffect)
                + device.map(percent).joined(separator: "  ") + " |                    " + apart.map(percent).joined(separator: "  ")
                + " |        " + naive.map(percent).joined(separator: "  "))
        }
        print("intervals per cell: \(results.first?.deviceDifference.intervals ?? 0) category rows, "
            + "\(results.first?.deviceAdjustedDifference.intervals ?? 0) adjusted figures")
        if !covered { throw BenchCommand.BenchError("a device-unit coverage is below 93%") }
    }
}
