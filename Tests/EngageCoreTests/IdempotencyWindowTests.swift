import EngageCore
import Testing

@Suite("Idempotency window")
struct IdempotencyWindowTests {
    @Test func theWindowIsWhatIngestionAcceptsPlusTheClockMargin() {
        #expect(IdempotencyWindow().length == .seconds(30 * 86_400 + 600 + 3_600))
        var limits = EventLimits()
        limits.maxPast = .seconds(90 * 86_400)
        limits.maxFuture = .seconds(0)
        #expect(IdempotencyWindow(limits: limits).length == .seconds(90 * 86_400 + 3_600))
    }
}
