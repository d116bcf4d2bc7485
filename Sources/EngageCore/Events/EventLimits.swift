/// What one event may be: its size, its nesting, and how far `occurred_at` may lie from the
/// server's clock.
public struct EventLimits: Sendable, Equatable {
    /// Bytes of one event's JSON text (the object, or the NDJSON line without its line break).
    public var maxEventBytes: Int
    /// The most `--max-event-bytes` accepts: what bounds an event, and so a line of an archive
    /// (`engage log prune --archive`), whatever the server was run with.
    public static let largestMaxEventBytes = 1_048_576
    /// Nesting levels of one event, the event object itself counting as level 1.
    public var maxDepth: Int
    /// How far before the server's clock `occurred_at` may lie.
    public var maxPast: Duration
    /// How far after the server's clock `occurred_at` may lie (clock skew).
    public var maxFuture: Duration
    /// The most `--max-future-minutes` accepts: how far an event's `occurred_at` may lie after its
    /// `recorded_at` (with a margin for the clocks of engage and PostgreSQL), whatever the server
    /// was run with.
    public static let largestMaxFuture: Duration = .seconds(1440 * 60)

    public init(maxEventBytes: Int = 8192, maxDepth: Int = 32, maxPast: Duration = .seconds(30 * 86_400),
                maxFuture: Duration = .seconds(10 * 60)) {
        self.maxEventBytes = maxEventBytes
        self.maxDepth = maxDepth
        self.maxPast = maxPast
        self.maxFuture = maxFuture
    }

    var maxPastMicroseconds: Int64 { EventLimits.microseconds(maxPast) }
    var maxFutureMicroseconds: Int64 { EventLimits.microseconds(maxFuture) }

    static func microseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
