import Testing
@testable import EngageCore

/// The replay's cache holds a file as long as the extension's does: a file kept `ttl` seconds ago
/// is still a hit, one kept `ttl` seconds and a fraction ago is not (the extension compares the
/// exact interval; truncated to whole seconds the replay predicted a read for up to a second more).
@Suite struct ReplayMediaCacheTests {
    static let photo = MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 1_200_000)
    static let kept = Timestamp(microsecondsSinceEpoch: 1_796_000_000_000_000)

    static func after(_ microseconds: Int64) -> Timestamp {
        Timestamp(microsecondsSinceEpoch: kept.microsecondsSinceEpoch + microseconds)
    }

    @Test func aFileExpiresTheMomentItsTimeToLiveHasPassed() {
        var cache = ReplayMediaCache()
        cache.receive(Self.photo, at: Self.kept, ttlSeconds: 86_400)
        let day = 86_400 * Timestamp.microsecondsPerSecond
        #expect(cache.holds(Self.photo, at: Self.after(day), ttlSeconds: 86_400))
        #expect(!cache.holds(Self.photo, at: Self.after(day + 500_000), ttlSeconds: 86_400))
        #expect(!cache.holds(Self.photo, at: Self.after(day + 1), ttlSeconds: 86_400))
        #expect(cache.state(for: [Self.photo], at: Self.after(day), ttlSeconds: 86_400) != .empty)
        #expect(cache.state(for: [Self.photo], at: Self.after(day + 500_000), ttlSeconds: 86_400) == .empty)
        #expect(ReplayMediaCache.ageSeconds(from: Self.kept, to: Self.after(-5)) == 0)
        #expect(ReplayMediaCache.ageSeconds(from: Self.kept, to: Self.after(1)) == 1)
        #expect(ReplayMediaCache.ageSeconds(from: Self.kept, to: Self.after(2_000_000)) == 2)
    }
}
