/// How many requests one API key may make: `requests` per `period` on average, and up to `burst`
/// at once after a quiet spell.
public struct RateLimit: Sendable, Equatable, CustomStringConvertible {
    public var requests: Int
    public var period: Duration
    public var burst: Int

    /// `requests` and `burst` must be at least 1 and `period` positive.
    public init(requests: Int, per period: Duration = .seconds(1), burst: Int) {
        precondition(requests > 0 && burst > 0 && period > .zero, "a rate limit needs positive numbers")
        self.requests = requests
        self.period = period
        self.burst = burst
    }

    /// The time it takes to earn one request back.
    public var interval: Duration { period / requests }

    /// `100/s` or `6000/m`, as `--rate-limit` takes it.
    public var description: String {
        let unit = period == .seconds(60) ? "m" : "s"
        return "\(requests)/\(unit) (burst \(burst))"
    }

    /// The rate part of `--rate-limit`: `N/s`, `N/m` or a bare `N` (per second), N from 1 to
    /// 1,000,000; nil for anything else. `off` and `0` are the caller's to handle.
    public static func parseRate(_ text: String) -> (requests: Int, period: Duration)? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let requests = Int(parts[0]), (1...1_000_000).contains(requests),
              parts[0].allSatisfy(\.isASCII) else { return nil }
        switch parts.count == 2 ? String(parts[1]) : "s" {
        case "s": return (requests, .seconds(1))
        case "m": return (requests, .seconds(60))
        default: return nil
        }
    }
}
