import EngageCore
import Foundation
import Runtime

/// `engage bench pipeline`: deliveries replayed through the extension model per second, one core.
enum PipelineBenchmark {
    static let deliveries = Option("deliveries", value: "n", help: "Deliveries per round.", default: 5_000_000, validate: .range(10_000...100_000_000))
    static let rounds = Option("rounds", value: "n", help: "Rounds; the median is reported.", default: 5, validate: .range(1...50))

    static let definition = Command(
        name: "pipeline",
        abstract: "Measure how many deliveries per second the extension model replays on one core.",
        options: [deliveries, rounds],
        run: run)

    static func run(_ arguments: ParsedArguments) throws {
        let deliveries = arguments[Self.deliveries]
        let rounds = arguments[Self.rounds]
        // A realistic mix: photos of many sizes with thumbnails, videos with posters, devices on
        // every kind of network, some media already cached.
        var inputs: [PipelineInput] = []
        for n in 0..<4096 {
            let video = n % 5 == 0
            let media: [MediaVariant] = video
                ? [MediaVariant(variant: "original", kind: .video, format: .mp4, bytes: 2_000_000 + n * 9_000, durationMS: 15_000),
                   MediaVariant(variant: "poster", kind: .image, format: .jpeg, bytes: 120_000),
                   MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: 30_000)]
                : [MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 200_000 + n * 3_000),
                   MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: 40_000)]
            let network = NetworkProfile(throughputBytesPerSecond: [3_000_000, 750_000, 150_000, 60_000][n % 4],
                                         latencyMS: [40, 120, 400, 900][n % 4])
            let cache = n % 7 == 0 ? CacheState(cachedNames: ["original"], in: media, ageSeconds: 600) : .empty
            inputs.append(PipelineInput(media: media, network: network, cache: cache))
        }
        let strategies: [any AttachmentStrategyModel] = ["none", "full", "thumbnail", "cached", "adaptive", "poster"].compactMap { StrategyCatalog.standard[$0] }
        let limits = PipelineLimits()
        var rates: [Double] = []
        var rich = 0
        let progress = ProgressLine.standardError("bench pipeline")
        for round in 1...rounds {
            progress.update("round \(round)/\(rounds)")
            let stopwatch = Stopwatch()
            for index in 0..<deliveries {
                let outcome = PipelineModel.run(inputs[index & 4095], strategy: strategies[index % strategies.count], limits: limits)
                if outcome.presentation == .rich { rich &+= 1 }
            }
            rates.append(Double(deliveries) / stopwatch.elapsed.seconds)
        }
        progress.finish()
        print(String(format: "pipeline model: median %.0f deliveries/s on one core (%d deliveries x %d rounds, six strategies in turn; %.1f%% rich)",
                     BenchCommand.median(rates), deliveries, rounds, 100 * Double(rich) / Double(deliveries * rounds)))
    }
}
