import EngageCore
import Testing

@Suite("Idempotency window")
struct IdempotencyWindowTests {
    @Test func theWindowIsWhatIngestionAcceptsAndMovesPlusTheClockMargin() {
        #expect(ClockCorrection.largest == .seconds(12 * 3_600))
        #expect(IdempotencyWindow().length == .seconds(30 * 86_400 + 600 + 12 * 3_600 + 3_600))
        // With the default limits a prune of 31 days stays allowed.
        #expect(IdempotencyWindow().length < .seconds(31 * 86_400))
        var limits = EventLimits()
        limits.maxPast = .seconds(90 * 86_400)
        limits.maxFuture = .seconds(0)
        #expect(IdempotencyWindow(limits: limits).length == .seconds(90 * 86_400 + 12 * 3_600 + 3_600))
    }
}
