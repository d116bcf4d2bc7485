import EngageCore
import Foundation
import Runtime

/// `engage bench replay`: simulated deliveries replayed per second by `StrategyReplay` (network
/// estimates from each device's history, caches, agreement, engagement), on one core, from
/// memory; the baseline is the pipeline model alone on the same pushes in the same run.
enum ReplayBenchmark {
    static let notifications = Option("notifications", value: "n", help: "Simulated notifications.", default: 1_000_000,
                                      validate: .range(10_000...5_000_000))
    static let devices = Option("devices", value: "n", help: "Devices they go to.", default: 100_000, validate: .range(100...1_000_000))
    static let rounds = Option("rounds", value: "n", help: "Rounds; the median is reported.", default: 3, validate: .range(1...20))

    static let definition = Command(
        name: "replay",
        abstract: "Measure how many logged deliveries per second a strategy replay processes on one core (simulated, in memory).",
        options: [notifications, devices, rounds],
        run: run)

    static func run(_ arguments: ParsedArguments) throws {
        var scenario = SimulationScenario.standard
        scenario.notificationCount = arguments[notifications]
        scenario.deviceCount = arguments[devices]
        let rounds = arguments[Self.rounds]
        let strategy = AdaptiveStrategy()

        var simulator = try TrafficSimulator(scenario: scenario, seed: 1, start: Timestamp(rfc3339: "2026-11-01T00:00:00Z")!)
        var events = simulator.remainingEvents()
        // The order the reader delivers: by device, then time.
        events.sort { a, b in
            if a.deviceID != b.deviceID { return a.deviceID < b.deviceID }
            if a.occurredAt != b.occurredAt { return a.occurredAt < b.occurredAt }
            return a.eventID < b.eventID
        }
        // The baseline's inputs: each push's media on the typical profile of its network.
        var inputs: [PipelineInput] = []
        var media: [String: [MediaVariant]] = [:]
        for event in events {
            switch event.details {
            case .sent(let sent): media[event.notificationID] = sent.media
            case .delivered(let delivered):
                inputs.append(PipelineInput(media: media[event.notificationID] ?? [],
                                            network: NetworkProfile.typical(for: delivered.network ?? .unknown)))
            default: break
            }
        }
        media = [:]

        var replayRates: [Double] = []
        var modelRates: [Double] = []
        var last: StrategyReplayResult?
        var modelRich = 0
        let limits = PipelineLimits()
        let progress = ProgressLine.standardError("bench replay")
        for round in 1...rounds {
            progress.update("round \(round)/\(rounds)")
            let stopwatch = Stopwatch()
            var replay = StrategyReplay(strategy: strategy)
            for event in events { replay.feed(event) }
            let result = replay.finish()
            replayRates.append(Double(result.counts.deliveries) / stopwatch.elapsed.seconds)
            last = result

            let modelStopwatch = Stopwatch()
            modelRich = 0
            for input in inputs where PipelineModel.run(input, strategy: strategy, limits: limits).presentation == .rich {
                modelRich &+= 1
            }
            modelRates.append(Double(inputs.count) / modelStopwatch.elapsed.seconds)
        }
        progress.finish()
        guard let result = last else { return }
        let replayRate = BenchCommand.median(replayRates), modelRate = BenchCommand.median(modelRates)
        print(String(format: """
            strategy replay (adaptive): median %.0f deliveries/s on one core (%d events, %d deliveries, %d devices, %d rounds)
            pipeline model alone on the same pushes (typical networks): median %.0f deliveries/s (%.1f%% rich); replay / model %.3f
            agreement with the recorded outcomes: %.4f of %d; predicted rich display rate %.1f%% (model-based estimates)
            """, replayRate, result.counts.events, result.counts.deliveries, result.counts.devices, rounds,
            modelRate, 100 * Double(modelRich) / Double(max(inputs.count, 1)), replayRate / modelRate,
            result.counts.agreement.rate ?? 0, result.counts.agreement.total, 100 * (result.counts.replayed.richRate ?? 0)))
    }
}
