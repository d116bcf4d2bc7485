import EngageCore
@testable import Projections
import Testing

/// The telemetry histograms the projector keeps between batches: it answers only for rows it
/// wrote, sends the rest to the table unless it knows the whole table, and forgets everything
/// when a batch removed a row or it would outgrow its limit.
@Suite("Telemetry histograms cached between batches")
struct TelemetryHistogramCacheTests {
    typealias Histograms = TelemetryHistogramCache.Histograms

    static func key(_ category: String) -> EngagementChanges.TelemetryKey {
        EngagementChanges.TelemetryKey(appID: "app-1", bucket: TelemetryContribution.Bucket(
            category: category, attachmentKind: .image, day: UTCDay(daysSinceEpoch: 20_424)))
    }

    @Test func answersForWhatItWroteAndReadsTheRestUnlessComplete() {
        let a = Self.key("a"), b = Self.key("b"), c = Self.key("c")
        let written = Histograms(downloads: [0, 2], processing: [1])
        var complete = TelemetryHistogramCache(limit: 10, isComplete: true)
        var partial = TelemetryHistogramCache(limit: 10, isComplete: false)
        complete.record([a: written])
        partial.record([a: written])
        #expect(complete.lookup([b, a, c]).known == [1: written])
        #expect(complete.lookup([b, a, c]).unknown == [])
        #expect(partial.lookup([b, a, c]).known == [1: written])
        #expect(partial.lookup([b, a, c]).unknown == [0, 2])

        // A later batch's sums replace the earlier ones.
        let later = Histograms(downloads: [0, 3], processing: [1, 1])
        complete.record([a: later, b: written])
        #expect(complete.lookup([a, b]).known == [0: later, 1: written])

        // A removed row: it forgets, and reads everything from then on.
        complete.record(nil)
        #expect(!complete.isComplete)
        #expect(complete.lookup([a, b]).known.isEmpty)
        #expect(complete.lookup([a, b]).unknown == [0, 1])
    }

    @Test func forgetsEverythingRatherThanOutgrowItsLimit() {
        var cache = TelemetryHistogramCache(limit: 2, isComplete: true)
        let rows = Histograms(downloads: [1], processing: [])
        cache.record([Self.key("a"): rows, Self.key("b"): rows])
        #expect(cache.isComplete)
        cache.record([Self.key("c"): rows])
        #expect(!cache.isComplete)
        #expect(cache.lookup([Self.key("a"), Self.key("c")]).unknown == [0, 1])
    }
}
