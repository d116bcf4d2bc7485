import Foundation
import SeededRandom
import Testing
@testable import EngageCore

@Suite struct PipelineAgreementTests {
    static func recorded(_ outcome: DeliveryOutcome) -> DeliveredDetails {
        DeliveredDetails(attachment: DeliveredAttachment(kind: .noAttachment), outcome: outcome, processingMS: 10,
                         timeWillExpire: false)
    }

    static func predicted(_ outcome: DeliveryOutcome) -> PipelineOutcome {
        PipelineOutcome(presentation: outcome == .attached ? .rich : .plain, outcome: outcome, failure: nil,
                        handoffMS: 10, bytesTransferred: 0, variantIndex: nil, source: nil, downloadMS: nil,
                        timeWillExpire: false)
    }

    @Test func comparesOutcomesOnly() {
        #expect(PipelineAgreement.compare(recorded: Self.recorded(.timeout), predicted: Self.predicted(.timeout)))
        #expect(!PipelineAgreement.compare(recorded: Self.recorded(.timeout), predicted: Self.predicted(.attached)))
    }

    @Test func accumulatorCountsAndMerges() {
        var a = PipelineAgreement.Accumulator()
        #expect(a.rate == nil)
        let first = a.record(recorded: Self.recorded(.attached), predicted: Self.predicted(.attached))
        let second = a.record(recorded: Self.recorded(.attached), predicted: Self.predicted(.attached))
        let third = a.record(recorded: Self.recorded(.timeout), predicted: Self.predicted(.attached))
        #expect(first && second && !third)
        var b = PipelineAgreement.Accumulator()
        b.record(recorded: Self.recorded(.notRequested), predicted: Self.predicted(.notRequested))
        a.merge(b)
        #expect(a.total == 4)
        #expect(a.agreed == 3)
        #expect(a.rate == 0.75)
        #expect(a.count(recorded: .attached, predicted: .attached) == 2)
        #expect(a.count(recorded: .timeout, predicted: .attached) == 1)
        #expect(a.count(recorded: .attached, predicted: .timeout) == 0)
        #expect(a.count(recorded: .notRequested, predicted: .notRequested) == 1)
    }

    /// Devices whose real network varies around a true profile record deliveries; the model,
    /// knowing only what the devices recorded before, predicts their next deliveries.
    @Test func reproducesSimulatedDevices() throws {
        var generator = SplitMix64(seed: 20_261_129)
        let limits = PipelineLimits()
        let catalog = StrategyCatalog.standard
        var agreement = PipelineAgreement.Accumulator()
        var perStrategy: [String: PipelineAgreement.Accumulator] = [:]
        var throughputErrors: [Double] = []

        for _ in 0..<300 {
            var device = SimulatedDevice.random(using: &generator)
            var history: [DeliveredDetails] = []
            for _ in 0..<30 {
                let media = SimulatedDevice.photo(using: &generator)
                let strategy: AttachmentStrategy = Bool.random(using: &generator) ? .full : .thumbnail
                history.append(device.deliver(media, catalog[strategy]!, strategy, cache: .empty, limits: limits,
                                              using: &generator))
            }
            let estimate = NetworkProfile.estimate(from: history, network: device.network)
            throughputErrors.append(abs(log(estimate.throughputBytesPerSecond / device.profile.throughputBytesPerSecond)))

            for _ in 0..<30 {
                let media = SimulatedDevice.anyMedia(using: &generator)
                let strategy = AttachmentStrategy.allCases.randomElement(using: &generator)!
                let cache = Int.random(in: 0..<5, using: &generator) == 0
                    ? CacheState(variants: VariantSet([0]), ageSeconds: Int.random(in: 0...172_800, using: &generator))
                    : .empty
                let recorded = device.deliver(media, catalog[strategy]!, strategy, cache: cache, limits: limits,
                                              using: &generator)
                history.append(recorded)
                let input = PipelineInput(media: media, network: estimate, cache: cache)
                let predicted = PipelineModel.run(input, strategy: catalog[strategy]!, limits: limits)
                agreement.record(recorded: recorded, predicted: predicted)
                perStrategy[strategy.rawValue, default: .init()].record(recorded: recorded, predicted: predicted)
            }
        }

        throughputErrors.sort()
        let medianError = throughputErrors[throughputErrors.count / 2]
        #expect(medianError < log(1.25), "median throughput error factor \(exp(medianError))")
        #expect(agreement.total == 9_000)
        #expect(try #require(agreement.rate) >= 0.9, "\(Self.describe(agreement))")
        for (name, tally) in perStrategy {
            #expect(try #require(tally.rate) >= 0.85, "\(name): \(Self.describe(tally))")
        }
        // Every outcome occurs, so the agreement is not carried by one easy case.
        for outcome in DeliveryOutcome.allCases {
            #expect(DeliveryOutcome.allCases.contains { agreement.count(recorded: outcome, predicted: $0) > 0 },
                    "\(outcome)")
        }
    }

    static func describe(_ tally: PipelineAgreement.Accumulator) -> String {
        var text = "rate \(tally.rate ?? 0);"
        for r in DeliveryOutcome.allCases {
            for p in DeliveryOutcome.allCases where tally.count(recorded: r, predicted: p) > 0 {
                text += " \(r.rawValue)->\(p.rawValue)=\(tally.count(recorded: r, predicted: p))"
            }
        }
        return text
    }
}

/// The "true" device of the simulation: each download sees the true profile scaled by
/// log-normal-ish jitter (sigma about 0.25), and 1 % of network downloads fail outright.
/// A strategy decides from the true profile, as a device that knows its usual network would.
struct SimulatedDevice {
    var network: NetworkType
    var profile: NetworkProfile

    static func random(using generator: inout SplitMix64) -> SimulatedDevice {
        let wifi = Int.random(in: 0..<10, using: &generator) < 6
        let throughput = wifi
            ? exp(Double.random(in: log(300_000.0)...log(20_000_000.0), using: &generator))
            : exp(Double.random(in: log(20_000.0)...log(3_000_000.0), using: &generator))
        let latency = Double.random(in: wifi ? 20...150 : 60...500, using: &generator)
        return SimulatedDevice(network: wifi ? .wifi : .cellular,
                               profile: NetworkProfile(throughputBytesPerSecond: throughput, latencyMS: latency))
    }

    /// An approximately standard normal value (sum of twelve uniforms minus six).
    static func normal(using generator: inout SplitMix64) -> Double {
        var sum = 0.0
        for _ in 0..<12 { sum += Double.random(in: 0..<1, using: &generator) }
        return sum - 6
    }

    mutating func deliver(_ media: [MediaVariant], _ model: any AttachmentStrategyModel, _ strategy: AttachmentStrategy,
                          cache: CacheState, limits: PipelineLimits,
                          using generator: inout SplitMix64) -> DeliveredDetails {
        let usual = PipelineInput(media: media, network: profile, cache: cache)
        let choice = model.choose(usual, limits: limits)
        let actual = NetworkProfile(
            throughputBytesPerSecond: profile.throughputBytesPerSecond * exp(0.25 * Self.normal(using: &generator)),
            latencyMS: profile.latencyMS * exp(0.25 * Self.normal(using: &generator)))
        let input = PipelineInput(media: media, network: actual, cache: cache)
        var outcome = PipelineModel.run(input, choice: choice, limits: limits)
        if outcome.source == .network, outcome.outcome == .attached,
           Int.random(in: 0..<100, using: &generator) == 0 {
            outcome.presentation = .plain
            outcome.outcome = .downloadFailed
            outcome.failure = .networkUnavailable
        }
        return outcome.deliveredDetails(for: input, network: network, strategy: strategy)
    }

    static func photo(using generator: inout SplitMix64) -> [MediaVariant] {
        let bytes = Int(exp(Double.random(in: log(100_000.0)...log(14_000_000.0), using: &generator)))
        return [MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: bytes),
                MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: max(20_000, bytes / 40))]
    }

    static func anyMedia(using generator: inout SplitMix64) -> [MediaVariant] {
        switch Int.random(in: 0..<100, using: &generator) {
        case 0..<55:
            return photo(using: &generator)
        case 55..<80:
            let bytes = Int(exp(Double.random(in: log(1_000_000.0)...log(60_000_000.0), using: &generator)))
            return [MediaVariant(variant: "original", kind: .video, format: .mp4, bytes: bytes),
                    MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: 30_000),
                    MediaVariant(variant: "poster", kind: .image, format: .jpeg, bytes: 250_000)]
        case 80..<95:
            let bytes = Int.random(in: 300_000...7_000_000, using: &generator)
            return [MediaVariant(variant: "original", kind: .audio, format: .mp3, bytes: bytes)]
        default:
            // Mislabelled media: a video file announced as audio.
            return [MediaVariant(variant: "original", kind: .audio, format: .mp4, bytes: 800_000),
                    MediaVariant(variant: "thumbnail", kind: .image, format: .png, bytes: 25_000)]
        }
    }
}
