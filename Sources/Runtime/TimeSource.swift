import Dispatch
import Foundation

/// The time as engage reads it: one value handed to everything that reads the time (the ingest
/// queue, the key cache and rate limiter, the routes that check `occurred_at`, the scheduler), so
/// that a test moves time by hand for all of them at once (TestSupport's `ManualTime`) instead of
/// sleeping.
public protocol TimeSource: Sendable {
    /// Monotonic time, for deadlines, timeouts, rates and cache lifetimes; it never jumps.
    var now: ContinuousClock.Instant { get }
    /// Microseconds since 1970-01-01T00:00:00Z by the wall clock, for what is stamped on data and
    /// checked against schedules; it jumps when the system's clock is set.
    var wallClockMicroseconds: Int64 { get }
    /// Suspends the calling task until `deadline` passes; throws `CancellationError` when the
    /// task is cancelled first.
    func sleep(until deadline: ContinuousClock.Instant) async throws
    /// Blocks the calling thread until `semaphore` is signalled (true, the signal taken) or
    /// `deadline` passes (false). For threads the caller owns, never the cooperative pool's.
    func wait(for semaphore: DispatchSemaphore, until deadline: ContinuousClock.Instant) -> Bool
}

extension TimeSource {
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }
}

/// The system's clocks: `ContinuousClock` and the wall clock.
public struct SystemTime: TimeSource {
    public init() {}

    public var now: ContinuousClock.Instant { ContinuousClock.now }

    public var wallClockMicroseconds: Int64 {
        Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
    }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await Task.sleep(until: deadline, clock: .continuous)
    }

    public func wait(for semaphore: DispatchSemaphore, until deadline: ContinuousClock.Instant) -> Bool {
        let left = ContinuousClock.now.duration(to: deadline).components
        // Rounded up, so that a timed-out wait does not end just before the deadline.
        let nanoseconds = left.seconds * 1_000_000_000 + (left.attoseconds + 999_999_999) / 1_000_000_000
        return semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: max(0, nanoseconds)))) == .success
    }
}
