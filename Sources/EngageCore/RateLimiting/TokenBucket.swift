/// A token bucket: it holds up to `limit.burst` tokens, earns one back every `limit.interval`,
/// and every request takes one; a request that finds it empty is refused until one is earned.
///
/// It keeps a single instant, the moment it will be full again (GCRA's "theoretical arrival
/// time"), rather than a token count and a refill timestamp: the tokens at `now` are
/// `burst - ceil((fullAt - now) / interval)`, in exact `Duration` arithmetic. It never reads a
/// clock: every call is told the time, so tests drive it with instants of their choosing.
public struct TokenBucket: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        case allowed
        /// The earliest a request can be allowed is `retryAfter` from now.
        case refused(retryAfter: Duration)
    }

    public let limit: RateLimit
    private var fullAt: ContinuousClock.Instant

    /// A full bucket.
    public init(_ limit: RateLimit, now: ContinuousClock.Instant) {
        self.limit = limit
        self.fullAt = now
    }

    /// Takes a token if there is one.
    public mutating func take(now: ContinuousClock.Instant) -> Decision {
        let owed = max(fullAt, now) - now
        // Taking one more token must leave the debt within what a full bucket can hold.
        let allowance = Self.allowance(limit)
        guard owed <= allowance else {
            return .refused(retryAfter: owed - allowance)
        }
        fullAt = max(fullAt, now) + limit.interval
        return .allowed
    }

    /// The debt a full bucket can hold, `interval × (burst - 1)`, kept within `Duration`'s range
    /// (a burst of `Int.max` a minute overflowed it, and the first request trapped): past
    /// `longestDebt` the bucket holds more than any server runs long enough to spend.
    static func allowance(_ limit: RateLimit) -> Duration {
        let steps = limit.burst - 1
        guard steps > 0 else { return .zero }
        if Double(steps) >= longestDebt / limit.interval { return longestDebt }
        return limit.interval * steps
    }

    /// About 290 billion years.
    static let longestDebt = Duration.seconds(Int64.max)

    /// Tokens available at `now`.
    public func tokens(at now: ContinuousClock.Instant) -> Int {
        let owed = max(fullAt, now) - now
        guard owed > .zero else { return limit.burst }
        // More whole intervals owed than the burst (only with a debt clamped to `longestDebt`).
        guard owed / limit.interval < Double(limit.burst) else { return 0 }
        // Whole intervals still owed, rounded up: a token half earned is not there yet.
        let (quotient, remainder) = owed.dividedWithRemainder(by: limit.interval)
        return limit.burst - quotient - (remainder > .zero ? 1 : 0)
    }

    /// A full bucket behaves like a new one, so it can be forgotten.
    public func isFull(at now: ContinuousClock.Instant) -> Bool { fullAt <= now }
}

extension Duration {
    /// Whole times `divisor` fits in `self`, and what is left; both non-negative for non-negative inputs.
    func dividedWithRemainder(by divisor: Duration) -> (Int, Duration) {
        let quotient = Int(self / divisor)
        var whole = quotient
        while divisor * (whole + 1) <= self { whole += 1 }
        while whole > 0 && divisor * whole > self { whole -= 1 }
        return (whole, self - divisor * whole)
    }
}
