import EngageClient
import EngageCore
import Foundation
import Testing
@testable import EngageNotificationService

/// The variant the extension downloads under each strategy is the one the server's pipeline
/// model chooses (with nothing cached, on an unknown network, the extension's own limits), so
/// that an event's `strategy` says what ran and the strategy replay credits it with what it did.
/// The extension chose the original for `cached` and `adaptive` and a poster for any media, and
/// read parts by name and order only, where the model reads sizes too.
@Suite struct StrategyAgreementTests {
    /// SplitMix64: the same payloads every run.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let names = ["original", "thumbnail", "poster", "hd", "sd", "still"]
    /// A format the system takes for each kind (by its wire name: both modules name the kinds).
    static let formats: [String: EngageCore.MediaFormat] = ["image": .jpeg, "gif": .gif, "video": .mp4, "audio": .mp3]
    static let strategies = ["none", "full", "thumbnail", "cached", "adaptive", "poster"]

    /// The model's choice as an index into the offered media.
    static func modelChoice(_ strategy: String, _ media: [PushPayload.Media]) throws -> Int? {
        let variants = media.map { entry in
            let kind = EngageCore.AttachmentKind(rawValue: entry.kind!.rawValue)!
            return EngageCore.MediaVariant(variant: entry.variant, kind: kind, format: formats[entry.kind!.rawValue]!, bytes: entry.bytes!)
        }
        let input = PipelineInput(media: variants, network: .typical(for: .unknown))
        let limits = PipelineLimits(processingOverheadMS: 50, downloadTimeoutMS: 25_000)
        switch try #require(StrategyCatalog.standard[strategy]).choose(input, limits: limits) {
        case .noAttachment: return nil
        case .variant(let index): return index
        }
    }

    @Test func theExtensionDownloadsWhatTheModelChooses() throws {
        var random = Generator(state: 20_261_206)
        let policy = ServiceExtensionPolicy()
        var chosen: [String: Set<String>] = [:]
        for _ in 0..<3_000 {
            let media = (0..<Int.random(in: 1...4, using: &random)).map { index in
                PushPayload.Media(variant: Self.names.randomElement(using: &random)!,
                                  url: URL(string: "https://cdn.example.com/\(index)")!,
                                  kind: [.image, .gif, .video, .audio].randomElement(using: &random)!,
                                  // Log-uniform from 1 kB to 60 MB: both sides of every size limit and of
                                  // what `adaptive` predicts in time.
                                  bytes: Int(exp(Double.random(in: log(1_000)...log(60_000_000), using: &random))))
            }
            let payload = PushPayload(media: media)
            for name in Self.strategies {
                let strategy = try #require(PushPayload(strategy: name).attachmentStrategy)
                let device = policy.media(for: payload, strategy: strategy, elapsed: .milliseconds(50))
                    .flatMap { chosen in media.firstIndex { $0.url == chosen.url } }
                let model = try Self.modelChoice(name, media)
                #expect(device == model, "\(name) of \(media.map { "\($0.variant) \($0.kind!) \($0.bytes!)" })")
                chosen[name, default: []].insert(device.map { media[$0].variant } ?? "nothing")
            }
        }
        // The payloads reach every branch: a variant found by size, a poster, and adaptive's three answers.
        #expect(chosen["thumbnail"]?.isSuperset(of: ["thumbnail", "original", "hd", "sd"]) == true, "\(chosen)")
        #expect(chosen["poster"]?.contains("poster") == true && chosen["poster"]?.contains("still") == true, "\(chosen)")
        #expect(chosen["adaptive"]?.isSuperset(of: ["original", "thumbnail", "nothing"]) == true, "\(chosen)")
    }
}
