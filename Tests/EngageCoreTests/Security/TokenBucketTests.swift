import Testing
@testable import EngageCore

/// The bucket is driven by instants the test chooses: no clock is read, nothing waits.
@Suite struct TokenBucketTests {
    let start = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test func aFullBucketAllowsTheBurstThenRefusesUntilATokenIsEarned() {
        // 10 per second: one token every 100 ms; 3 at once.
        var bucket = TokenBucket(RateLimit(requests: 10, burst: 3), now: at(0))
        #expect(bucket.tokens(at: at(0)) == 3)
        #expect(bucket.take(now: at(0)) == .allowed)
        #expect(bucket.take(now: at(0)) == .allowed)
        #expect(bucket.take(now: at(0)) == .allowed)
        #expect(bucket.tokens(at: at(0)) == 0)
        #expect(bucket.take(now: at(0)) == .refused(retryAfter: .milliseconds(100)))
        #expect(bucket.take(now: at(40)) == .refused(retryAfter: .milliseconds(60)))
        #expect(bucket.tokens(at: at(99)) == 0)
        #expect(bucket.tokens(at: at(100)) == 1)
        #expect(bucket.take(now: at(100)) == .allowed)
        #expect(bucket.take(now: at(100)) == .refused(retryAfter: .milliseconds(100)))
    }

    /// `interval × (burst - 1)` overflowed `Duration` for a burst of `Int.max` (a limit the
    /// library's `RateLimit` takes, though `--rate-burst` stops at 10,000,000): the first request
    /// trapped and took the server down.
    @Test(arguments: [RateLimit(requests: 1, per: .seconds(60), burst: .max), RateLimit(requests: 1, per: .seconds(3600), burst: 1 << 60),
                      RateLimit(requests: 1_000_000, per: .seconds(1), burst: .max)])
    func anEnormousBurstNeverOverflows(limit: RateLimit) {
        var bucket = TokenBucket(limit, now: at(0))
        for _ in 0..<1_000 { #expect(bucket.take(now: at(0)) == .allowed) }
        #expect(bucket.tokens(at: at(0)) == limit.burst - 1_000)
        #expect(!bucket.isFull(at: at(0)))
    }

    @Test func refusedRequestsTakeNothing() {
        var bucket = TokenBucket(RateLimit(requests: 10, burst: 1), now: at(0))
        #expect(bucket.take(now: at(0)) == .allowed)
        for ms in stride(from: 0, to: 100, by: 10) {
            #expect(bucket.take(now: at(ms)) == .refused(retryAfter: .milliseconds(100 - ms)))
        }
        // Ten refusals did not push the next token further away.
        #expect(bucket.take(now: at(100)) == .allowed)
    }

    @Test func aQuietBucketRefillsToTheBurstAndNoFurther() {
        var bucket = TokenBucket(RateLimit(requests: 10, burst: 3), now: at(0))
        for _ in 0..<3 { #expect(bucket.take(now: at(0)) == .allowed) }
        #expect(bucket.tokens(at: at(150)) == 1)
        #expect(bucket.tokens(at: at(250)) == 2)
        #expect(!bucket.isFull(at: at(299)))
        #expect(bucket.isFull(at: at(300)))
        #expect(bucket.tokens(at: at(60_000)) == 3)
        for _ in 0..<3 { #expect(bucket.take(now: at(60_000)) == .allowed) }
        #expect(bucket.take(now: at(60_000)) == .refused(retryAfter: .milliseconds(100)))
    }

    @Test func steadyTrafficAtTheRateIsNeverRefused() {
        var bucket = TokenBucket(RateLimit(requests: 10, burst: 1), now: at(0))
        for tick in 0..<1000 {
            #expect(bucket.take(now: at(tick * 100)) == .allowed)
        }
    }

    @Test func overTheRateExactlyTheRateGetsThrough() {
        // 40 requests per second offered for 10 s against 10/s with a burst of 5: 5 + 10 * 10 - 1
        // tokens (the last one is earned at exactly 10 s, not within [0, 10 s)).
        var bucket = TokenBucket(RateLimit(requests: 10, burst: 5), now: at(0))
        var allowed = 0
        for tick in 0..<400 where bucket.take(now: at(tick * 25)) == .allowed { allowed += 1 }
        #expect(allowed == 5 + 100 - 1)
    }

    @Test func perMinuteRates() {
        var bucket = TokenBucket(RateLimit(requests: 6, per: .seconds(60), burst: 2), now: at(0))
        #expect(bucket.limit.interval == .seconds(10))
        #expect(bucket.take(now: at(0)) == .allowed)
        #expect(bucket.take(now: at(0)) == .allowed)
        #expect(bucket.take(now: at(1_000)) == .refused(retryAfter: .seconds(9)))
        #expect(bucket.take(now: at(10_000)) == .allowed)
    }

    @Test func intervalsThatDoNotDivideASecondStayExact() {
        // 3 per second: 333,333,333,333,333,333 attoseconds each.
        var bucket = TokenBucket(RateLimit(requests: 3, burst: 1), now: at(0))
        #expect(bucket.take(now: at(0)) == .allowed)
        let third = Duration.seconds(1) / 3
        #expect(bucket.take(now: at(0)) == .refused(retryAfter: third))
        #expect(bucket.take(now: at(0) + third) == .allowed)
        #expect(bucket.take(now: at(0) + third * 2) == .allowed)
        #expect(bucket.take(now: at(0) + third * 2) == .refused(retryAfter: third))
    }

    @Test(arguments: [
        ("100/s", 100, 1), ("100", 100, 1), ("6000/m", 6000, 60), ("1/s", 1, 1), ("1000000/s", 1_000_000, 1),
    ] as [(String, Int, Int64)])
    func parsesRates(_ text: String, _ requests: Int, _ seconds: Int64) {
        let parsed = RateLimit.parseRate(text)
        #expect(parsed?.requests == requests)
        #expect(parsed?.period == .seconds(seconds))
    }

    @Test(arguments: ["", "/s", "0/s", "-5/s", "10/h", "10/s/s", "ten/s", "1000001/s", "10 /s", "١٠/s", "off"])
    func refusesOtherRates(_ text: String) {
        #expect(RateLimit.parseRate(text) == nil)
    }
}
