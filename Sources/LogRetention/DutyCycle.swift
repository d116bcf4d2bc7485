import Glibc

/// How hard a prune works: after each batch it rests so that it works at most `share` of the
/// time (a batch of 0.1 s at a quarter rests 0.3 s), plus a fixed `pause`. On a machine that
/// ingestion already keeps busy, a prune that never rests takes its cores whole for as long as a
/// batch lasts, and ingestion's slowest requests wait for it.
public struct DutyCycle: Sendable, Equatable {
    /// The share of the time spent working, in (0, 1]; 1 never rests but for `pause`.
    public var share: Double
    /// A fixed rest after every batch.
    public var pause: Duration

    /// The default a prune states in its report: a quarter of the time.
    public static let standard = DutyCycle(share: 0.25)
    public static let unpaced = DutyCycle(share: 1)

    public init(share: Double, pause: Duration = .zero) {
        precondition(share > 0 && share <= 1, "a duty cycle's share lies in (0, 1]")
        self.share = share
        self.pause = pause
    }

    /// The rest owed after a batch that took `worked`.
    public func rest(after worked: Duration) -> Duration {
        let seconds = worked.seconds * (1 - share) / share
        return .microseconds(Int64((seconds * 1_000_000).rounded())) + pause
    }

    /// Sleeps the rest owed after a batch that took `worked`.
    func rest(afterWorking worked: Duration) {
        let micros = LogPruner.microseconds(rest(after: worked))
        guard micros > 0 else { return }
        usleep(UInt32(clamping: micros))
    }

    /// `25% of the time` or `unpaced`, with the pause if there is one.
    public var description: String {
        let work = share >= 1 ? "unpaced" : "working \(Int((share * 100).rounded()))% of the time"
        let (seconds, attoseconds) = pause.components
        let pauseMs = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return pause > .zero ? "\(work), \(pauseMs) ms rest per batch" : work
    }
}
