import Testing
@testable import EngageCore

@Suite struct NetworkProfileTests {
    static func download(_ bytes: Int, _ ms: Int, outcome: DeliveryOutcome = .attached,
                         source: MediaSource = .network, network: NetworkType? = .wifi) -> DeliveredDetails {
        DeliveredDetails(
            attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: bytes, source: source, downloadMS: ms),
            outcome: outcome, processingMS: ms + 50, timeWillExpire: false, network: network)
    }

    static func close(_ a: Double, _ b: Double, relative: Double = 1e-9) -> Bool {
        abs(a - b) <= relative * max(abs(a), abs(b))
    }

    @Test func downloadTime() {
        let profile = NetworkProfile(throughputBytesPerSecond: 1_000_000, latencyMS: 80)
        #expect(profile.downloadMS(bytes: 500_000) == 580)
        #expect(NetworkProfile.typical(for: .offline).downloadMS(bytes: 1) == .infinity)
    }

    @Test func withoutHistoryTheTypicalProfile() {
        for network in NetworkType.allCases {
            #expect(NetworkProfile.estimate(from: [], network: network) == .typical(for: network))
        }
        #expect(NetworkProfile.typical(for: .cellular)
                == NetworkProfile(throughputBytesPerSecond: 750_000, latencyMS: 120))
        // Offline ignores any history.
        #expect(NetworkProfile.estimate(from: [Self.download(100_000, 180, network: nil)], network: .offline)
                == .typical(for: .offline))
    }

    @Test func theilSenSeparatesLatencyFromThroughput() {
        // download_ms = 80 + bytes / 1,000 exactly, with one wild outlier among eight.
        let sizes = [40_000, 100_000, 2_000_000, 500_000, 250_000, 1_200_000, 60_000]
        var history = sizes.map { Self.download($0, 80 + $0 / 1_000) }
        history.insert(Self.download(100_000, 5_000), at: 3)
        let profile = NetworkProfile.estimate(from: history, network: .wifi)
        #expect(Self.close(profile.throughputBytesPerSecond, 1_000_000, relative: 1e-6))
        #expect(Self.close(profile.latencyMS, 80, relative: 1e-6))
    }

    @Test func sameSizesUseTheTypicalLatencyAndTheMedianRate() {
        // Wi-Fi latency 40 ms: rates 1,000,000, 2,000,000 and 500,000 B/s; the median is 1,000,000.
        let history = [Self.download(500_000, 540), Self.download(500_000, 290), Self.download(500_000, 1_040)]
        #expect(NetworkProfile.estimate(from: history, network: .wifi)
                == NetworkProfile(throughputBytesPerSecond: 1_000_000, latencyMS: 40))
        // The denominator is at least half the download time: 500,000 B in 60 ms counts as 30 ms.
        #expect(NetworkProfile.estimate(from: [Self.download(500_000, 60)], network: .wifi)
                == NetworkProfile(throughputBytesPerSecond: 500_000 * 1000 / 30, latencyMS: 40))
    }

    @Test func onlyTimeoutsGiveAnUpperBound() {
        let timeout = DeliveredDetails(
            attachment: DeliveredAttachment(kind: .noAttachment, format: .jpeg, bytes: 2_000_000, source: .network,
                                            downloadMS: 27_950),
            outcome: .timeout, processingMS: 28_000, timeWillExpire: true, network: .cellular)
        #expect(NetworkProfile.estimate(from: [timeout], network: .cellular)
                == NetworkProfile(throughputBytesPerSecond: 2_000_000.0 * 1000 / 28_000, latencyMS: 120))
    }

    @Test func unusableDeliveriesAreSkipped() {
        let history = [
            Self.download(500_000, 300, network: .cellular),           // another network
            Self.download(500_000, 2, source: .cache),                 // not a download
            Self.download(500_000, 300, outcome: .downloadFailed),     // incomplete
            Self.download(500_000, 300, outcome: .notRequested),
            Self.download(0, 300),                                     // no size
            DeliveredDetails(attachment: DeliveredAttachment(kind: .image, bytes: 500_000, source: .network),
                             outcome: .attached, processingMS: 400, timeWillExpire: false), // no download time
        ]
        #expect(NetworkProfile.estimate(from: history, network: .wifi) == .typical(for: .wifi))
        // Deliveries without a network type count for any.
        let untyped = [Self.download(500_000, 540, network: nil)]
        #expect(NetworkProfile.estimate(from: untyped, network: .wifi)
                == NetworkProfile(throughputBytesPerSecond: 1_000_000, latencyMS: 40))
    }

    @Test func onlyTheLatestWindowCounts() {
        // Old deliveries at 100 kB/s, then a window's worth at 1 MB/s (same size, typical latency).
        let old = Array(repeating: Self.download(500_000, 5_040), count: 300)
        let recent = Array(repeating: Self.download(500_000, 540), count: NetworkProfile.estimationWindow)
        #expect(NetworkProfile.estimate(from: old + recent, network: .wifi).throughputBytesPerSecond == 1_000_000)
    }
}
