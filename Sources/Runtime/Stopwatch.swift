/// Measures elapsed time on the monotonic clock, for `batch.ms`-style log fields and histograms.
///
///     let stopwatch = Stopwatch()
///     try await store.append(batch)
///     logger.info("batch.appended", ["batch.ms": stopwatch.millisecondsText])
public struct Stopwatch: Sendable {
    public let start: ContinuousClock.Instant

    public init() {
        start = ContinuousClock.now
    }

    public var elapsed: Duration {
        ContinuousClock.now - start
    }

    public var elapsedMilliseconds: Double {
        elapsed.milliseconds
    }

    /// Elapsed milliseconds with one decimal, e.g. `3.2`.
    public var millisecondsText: String {
        Self.millisecondsText(elapsed)
    }

    /// `duration` in milliseconds with one decimal, e.g. `3.2`.
    public static func millisecondsText(_ duration: Duration) -> String {
        let tenths = Int64((duration.milliseconds * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }
}

extension Duration {
    /// The duration in (fractional) milliseconds.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
