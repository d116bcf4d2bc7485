import Runtime
import Testing
import TestSupport

@testable import EngageAPI

/// The ingestion page's rates: readings of the counters on the sampler's schedule, moved by hand.
@Suite struct IngestionRateSamplerTests {
    @Test(.timeLimit(.minutes(1)))
    func ratesAreDifferencesOfReadingsOverTheTimeBetweenThem() async throws {
        let time = ManualTime()
        let metrics = IngestMetrics(registry: MetricsRegistry())
        let sampler = IngestionRateSampler(metrics: metrics, time: time, interval: .seconds(10))
        let task = Task { try await sampler.run() }
        defer { task.cancel() }
        try await pollUntil { time.sleepers == 1 }
        #expect(sampler.rates(over: 60).accepted == nil, "no second observed yet")
        for step in 1...8 {
            metrics.accepted.increment(by: 100 * step)
            metrics.rejected.increment(by: 5)
            time.advance(by: .seconds(10))
            try await pollUntil { sampler.acceptedHistory().count == step }
        }
        #expect(sampler.acceptedHistory() == (1...8).map { Double(10 * $0) })
        // The last minute: readings at 20 s and 80 s, 300 + ... + 800 events between them.
        let minute = sampler.rates(over: 60)
        #expect(minute.observed == 60)
        #expect(minute.accepted == Double((3...8).reduce(0, +) * 100) / 60)
        #expect(minute.rejected == 0.5)
        // Five minutes asked, 80 s observed: the rate says over how long it was measured.
        let five = sampler.rates(over: 300)
        #expect(five.observed == 80 && five.accepted == Double((1...8).reduce(0, +) * 100) / 80)
    }

    @Test(.timeLimit(.minutes(1)))
    func anHourOfReadingsIsKept() async throws {
        let time = ManualTime()
        let metrics = IngestMetrics(registry: MetricsRegistry())
        let sampler = IngestionRateSampler(metrics: metrics, time: time, interval: .seconds(1_200))
        let task = Task { try await sampler.run() }
        defer { task.cancel() }
        try await pollUntil { time.sleepers == 1 }
        for step in 1...6 {
            metrics.accepted.increment(by: 1_200 * step)
            time.advance(by: .seconds(1_200))
            try await pollUntil { time.sleepers == 1 && sampler.acceptedHistory().last == Double(step) }
        }
        // Four readings fit an hour at this interval: three intervals, the newest.
        #expect(sampler.acceptedHistory() == [4, 5, 6])
    }
}
