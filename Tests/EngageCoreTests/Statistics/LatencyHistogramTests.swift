import Foundation
import SeededRandom
import Testing
@testable import EngageCore

@Suite struct LatencyHistogramTests {
    @Test func standardLayout() {
        let layout = LatencyHistogram.Layout.standard
        #expect(layout.bucketCount == 551)
        #expect(layout.countsLength == 553)
        #expect(layout.index(of: 0) == 0)
        #expect(layout.index(of: .nan) == 0)
        #expect(layout.index(of: -5) == 0)
        #expect(layout.index(of: 1) == 1)
        #expect(layout.index(of: 60_000) == 551)
        #expect(layout.index(of: 60_001) == 552)
        #expect(layout.index(of: .infinity) == 552)
    }

    @Test func everyBucketReportsWithinTheRelativeError() {
        let layout = LatencyHistogram.Layout.standard
        var value = layout.minimum
        while value <= layout.maximum {
            let reported = layout.representative(ofIndex: layout.index(of: value))
            #expect(abs(reported - value) <= layout.relativeError * value * (1 + 1e-9), "value=\(value)")
            value *= 1.003
        }
    }

    @Test func quantilesOnRandomDataStayWithinTheBound() throws {
        var generator = SplitMix64(seed: 314)
        for trial in 0..<20 {
            var histogram = LatencyHistogram()
            var values: [Double] = []
            let count = Int.random(in: 1...5000, using: &generator)
            for _ in 0..<count {
                // Log-normal-ish latencies spread across 1 ms ... 60 s.
                let value = exp(Double.random(in: 0...log(60_000.0), using: &generator))
                values.append(value)
                histogram.record(value)
            }
            values.sort()
            for q in [0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1] {
                let exact = values[Int((q * Double(values.count - 1)).rounded(.down))]
                let estimate = try #require(histogram.quantile(q))
                #expect(abs(estimate - exact) <= 0.01 * exact * (1 + 1e-9), "trial \(trial) q=\(q)")
            }
        }
    }

    @Test func mergeEqualsRecordingEverythingInOne() throws {
        var generator = SplitMix64(seed: 5)
        var combined = LatencyHistogram()
        var parts = [LatencyHistogram(), LatencyHistogram(), LatencyHistogram()]
        for index in 0..<3000 {
            let value = Double.random(in: 0.5...70_000, using: &generator)
            combined.record(value)
            parts[index % 3].record(value)
        }
        var merged = LatencyHistogram()
        for part in parts { merged.merge(part) }
        #expect(merged == combined)
        #expect(merged.totalCount == 3000)
        // Round trip through the stored form.
        let restored = try LatencyHistogram(counts: merged.counts)
        #expect(restored == merged)
    }

    @Test func outOfRangeValuesReportTheBounds() {
        var histogram = LatencyHistogram()
        histogram.record(0.2)
        histogram.record(100_000)
        #expect(histogram.quantile(0) == 1)
        #expect(histogram.quantile(1) == 60_000)
        #expect(LatencyHistogram().quantile(0.5) == nil)
    }

    @Test func durationsAndWeightedCounts() {
        var histogram = LatencyHistogram()
        histogram.record(.milliseconds(250), count: 3)
        histogram.record(.seconds(2))
        #expect(histogram.totalCount == 4)
        let median = histogram.quantile(0.5)!
        #expect(abs(median - 250) <= 2.5)
        let top = histogram.quantile(1)!
        #expect(abs(top - 2000) <= 20)
    }

    @Test func storedCountsAreValidated() {
        #expect(throws: StatisticsError(.invalidHistogram)) { try LatencyHistogram(counts: [1, 2, 3]) }
        var counts = Array(repeating: Int64(0), count: LatencyHistogram.Layout.standard.countsLength)
        counts[4] = -1
        #expect(throws: StatisticsError(.invalidHistogram)) { try LatencyHistogram(counts: counts) }
    }

    @Test func customLayout() {
        let layout = LatencyHistogram.Layout(minimum: 0.1, maximum: 1000, relativeError: 0.02)
        var histogram = LatencyHistogram(layout: layout)
        for value in stride(from: 0.1, through: 1000, by: 0.37) { histogram.record(value) }
        let median = histogram.quantile(0.5)!
        #expect(abs(median - 500) <= 0.02 * 500 + 0.37)
    }
}
