import Testing
@testable import EngageCore

/// `apply` changes the state in place instead of merging a state of the one event: it must stay
/// that merge exactly, at every step of a stream with repeats, in any order.
@Suite struct NotificationStateApplyTests {
    @Test func applyingAnEventEqualsMergingItsState() {
        for seed in UInt64(30_001)...32_000 {
            var random = StreamRandom(seed: seed)
            let events = redelivered(randomStream(&random), &random)
            var applied = NotificationState()
            var merged = NotificationState()
            for (step, event) in events.enumerated() {
                applied.apply(event)
                merged = merged.merging(NotificationState(event))
                guard applied == merged else {
                    Issue.record("seed \(seed), event \(step): apply differs from merge")
                    return
                }
            }
            #expect(applied.eventIDs == Array(Set(events.map(\.eventID))).sorted(), "seed \(seed)")
        }
    }
}
