import EngageCore
import Runtime
import Synchronization

/// One token bucket per API key, in this process's memory: N processes behind a load balancer
/// let a key through up to N times the limit, and a restart refills every bucket.
///
/// Requests, not events, are counted: the limit is checked right after the key, before the body
/// is read, so a refused request costs no decoding; `--max-events` already bounds each request.
public final class KeyRateLimiter: Sendable {
    public let limit: RateLimit
    private let time: any TimeSource
    private let buckets = Mutex<[String: TokenBucket]>([:])
    /// Past this many buckets, full ones (keys that went quiet) are forgotten.
    private static let pruneThreshold = 10_000

    public init(limit: RateLimit, time: any TimeSource = SystemTime()) {
        self.limit = limit
        self.time = time
    }

    /// Takes a token from the key's bucket.
    public func admit(keyID: String) -> TokenBucket.Decision {
        let now = time.now
        return buckets.withLock { buckets in
            if buckets.count >= Self.pruneThreshold, buckets[keyID] == nil {
                buckets = buckets.filter { !$0.value.isFull(at: now) }
            }
            return buckets[keyID, default: TokenBucket(limit, now: now)].take(now: now)
        }
    }

    /// What ``admit(keyID:)`` would decide now, without taking a token.
    public func peek(keyID: String) -> TokenBucket.Decision {
        let now = time.now
        var bucket = buckets.withLock { $0[keyID] } ?? TokenBucket(limit, now: now)
        return bucket.take(now: now)
    }

    /// Retry-After: whole seconds, rounded up, at least 1.
    static func retryAfterSeconds(_ wait: Duration) -> Int {
        let (seconds, attoseconds) = wait.components
        return max(1, Int(seconds) + (attoseconds > 0 ? 1 : 0))
    }
}
