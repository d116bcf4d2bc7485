import EngageClient
import EngageCore
import Foundation
import SeededRandom
import Testing
@testable import EngageNotificationService

/// The variant the extension attaches under each strategy is the one the server's pipeline model
/// chooses (with the strategy replay's limits, the same files kept, on an unknown network), so
/// that an event's `strategy` says what ran and the strategy replay credits it with what it did.
/// The extension chose the original for `cached` and `adaptive` and a poster for any media, and
/// read parts by name and order only, where the model reads sizes too.
@Suite struct StrategyAgreementTests {
    static let names = ["original", "thumbnail", "poster", "hd", "sd", "still"]
    /// A format the system takes for each kind (by its wire name: both modules name the kinds).
    static let formats: [String: EngageCore.MediaFormat] = ["image": .jpeg, "gif": .gif, "video": .mp4, "audio": .mp3]
    static let strategies = ["none", "full", "thumbnail", "cached", "adaptive", "poster"]

    /// The model's choice as an index into the offered media, `overheadMS` into the extension's
    /// run (the model charges it before any media work).
    /// `unaccepted` holds the indices offered in a format the system refuses for their kind (the
    /// push does not say formats: the extension cannot know, and the model must not choose by it).
    static func modelChoice(_ strategy: String, _ media: [PushPayload.Media], overheadMS: Int, cached: Set<Int>,
                            unaccepted: Set<Int> = []) throws -> Int? {
        let variants = media.enumerated().map { index, entry in
            let kind = EngageCore.AttachmentKind(rawValue: entry.kind!.rawValue)!
            let format = unaccepted.contains(index)
                ? EngageCore.MediaFormat.allCases.first { !SupportedFormats.apple.supports($0, for: kind) }!
                : formats[entry.kind!.rawValue]!
            return EngageCore.MediaVariant(variant: entry.variant, kind: kind, format: format, bytes: entry.bytes!)
        }
        let input = PipelineInput(media: variants, network: .typical(for: .unknown),
                                  cache: cached.isEmpty ? .empty : CacheState(variants: VariantSet(cached), ageSeconds: 0))
        var limits = StrategyReplaySettings().limits
        limits.processingOverheadMS = overheadMS
        switch try #require(StrategyCatalog.standard[strategy]).choose(input, limits: limits) {
        case .noAttachment: return nil
        case .variant(let index): return index
        }
    }

    @Test func theExtensionDownloadsWhatTheModelChooses() throws {
        var random = SplitMix64(seed: 20_261_206)
        let policy = ServiceExtensionPolicy()
        var chosen: [String: Set<String>] = [:]
        var keptTooLargeToDownload = 0
        // Sizes on and beside each limit (Apple's per kind; what `adaptive` predicts in time 50 ms
        // in: 50 + 2 (150 + b / 500) <= 28,000 ms; and within the 25 s download limit:
        // 2 (150 + b / 500) <= 25,000 ms), and none at all (nothing to attach), drawn often
        // enough to tie as well.
        let edges = [5_000_000, 5_000_001, 6_175_000, 6_175_001, 6_912_500, 6_912_501, 10_000_000, 10_000_001, 50_000_000,
                     50_000_001, 4_096, 0]
        for round in 0..<4_000 {
            // Most runs 50 ms in, as the model charges; some 3 s in, where what is left decides.
            let overheadMS = round % 4 == 3 ? 3_000 : 50
            let media = (0..<Int.random(in: 1...4, using: &random)).map { index in
                PushPayload.Media(variant: Self.names.randomElement(using: &random)!,
                                  url: URL(string: "https://cdn.example.com/\(index)")!,
                                  kind: [.image, .gif, .video, .audio].randomElement(using: &random)!,
                                  // Log-uniform from 1 kB to 60 MB, or one of the edges.
                                  bytes: Bool.random(using: &random) ? edges.randomElement(using: &random)!
                                      : Int(exp(Double.random(in: log(1_000)...log(60_000_000), using: &random))))
            }
            let payload = PushPayload(media: media)
            // Half the pushes find some of their files kept from an earlier one.
            let cached = Set(media.indices.filter { _ in round % 2 == 1 && Bool.random(using: &random) })
            // Some offered in a format the system refuses, which only the download reveals.
            let unaccepted = Set(media.indices.filter { _ in round % 5 == 2 && Bool.random(using: &random) })
            for name in Self.strategies {
                let strategy = try #require(PushPayload(strategy: name).attachmentStrategy)
                let device = policy.media(for: payload, strategy: strategy, elapsed: .milliseconds(overheadMS),
                                          cached: Set(cached.map { media[$0].url }))
                    .flatMap { chosen in media.firstIndex { $0.url == chosen.url } }
                let model = try Self.modelChoice(name, media, overheadMS: overheadMS, cached: cached, unaccepted: unaccepted)
                #expect(device == model, "\(name) at \(overheadMS) ms, \(cached) kept, of \(media.map { "\($0.variant) \($0.kind!) \($0.bytes!)" })")
                chosen[name, default: []].insert(device.map { media[$0].variant } ?? "nothing")
                if name == "adaptive", let device, cached.contains(device), media[device].bytes! > 6_912_500 { keptTooLargeToDownload += 1 }
            }
        }
        // Kept files change the choice: `adaptive` reads one too large to download in time.
        #expect(keptTooLargeToDownload > 0)
        // The payloads reach every branch: a variant found by size, a poster, and adaptive's three answers.
        #expect(chosen["thumbnail"]?.isSuperset(of: ["thumbnail", "original", "hd", "sd"]) == true, "\(chosen)")
        #expect(chosen["poster"]?.contains("poster") == true && chosen["poster"]?.contains("still") == true, "\(chosen)")
        #expect(chosen["adaptive"]?.isSuperset(of: ["original", "thumbnail", "nothing"]) == true, "\(chosen)")
    }
}
