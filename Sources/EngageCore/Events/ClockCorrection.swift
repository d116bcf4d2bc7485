/// How far a request's `occurred_at` values move back to make up for a device clock running ahead.
///
/// `occurred_at` is the device's clock. A client that says what its clock read as it sent the
/// request (`Engage-Sent-At`) lets the server measure that clock against its own: the difference is
/// the clock's error less the request's transit. When the clock is more than `tolerance` ahead (no
/// transit makes a clock look ahead), each event of the request whose time is itself more than
/// `tolerance` ahead of the server's clock, a time that cannot be right, moves back by that
/// difference: it is no longer rejected as in the future (and lost), nor filed hours late. An
/// event whose time could be right stays as recorded: one recorded before the clock was set ahead,
/// or given its time by the app. A clock more than `largest` ahead is a clock set by hand to
/// another day, not an error to undo: its events are judged as sent. A clock behind is left alone:
/// its events are accepted for `--max-past-days` and lose nothing. Because a retry may be moved
/// differently from its original (the clock put right in between), the idempotency window is
/// longer by `largest` (the window a prune keeps).
public struct ClockCorrection: Sendable, Equatable {
    /// The request header with the device's clock as it sent, an RFC 3339 time.
    public static let header = "Engage-Sent-At"
    /// A clock this little ahead is left alone.
    public static let tolerance: Duration = .seconds(60)
    /// A clock further ahead than this is left alone: half a day covers most clocks set to another
    /// time zone, and keeps the idempotency window under 31 days with the default limits.
    public static let largest: Duration = .seconds(12 * 3600)

    /// Added to each `occurred_at` of the request ahead of the server's clock: zero, or negative
    /// for a clock ahead.
    public let microseconds: Int64

    public static let none = ClockCorrection(microseconds: 0)

    init(microseconds: Int64) {
        self.microseconds = microseconds
    }

    /// The correction for a request whose device clock read `sentAt` as it sent, received when
    /// the server's clock read `receivedAt`.
    public init(sentAt: Timestamp, receivedAt: Timestamp) {
        let ahead = sentAt.microsecondsSinceEpoch - receivedAt.microsecondsSinceEpoch
        let corrects = ahead > EventLimits.microseconds(Self.tolerance) && ahead <= EventLimits.microseconds(Self.largest)
        self.init(microseconds: corrects ? -ahead : 0)
    }

    /// The correction a request's `Engage-Sent-At` value asks for: none without the header, nil
    /// when the value is not an RFC 3339 time.
    public static func requested(by header: String?, receivedAt: Timestamp) -> ClockCorrection? {
        guard let header else { return ClockCorrection.none }
        return Timestamp(rfc3339: header).map { ClockCorrection(sentAt: $0, receivedAt: receivedAt) }
    }

    /// `recorded` moved back when it is more than `tolerance` ahead of `now`, as it cannot be right.
    public func applied(to recorded: Timestamp, now: Timestamp) -> Timestamp {
        guard microseconds != 0,
              recorded.microsecondsSinceEpoch - now.microsecondsSinceEpoch > EventLimits.microseconds(Self.tolerance)
        else { return recorded }
        return recorded.adding(microseconds: microseconds)
    }

    /// Words for a problem about an `occurred_at` moved from `recorded`, empty when it was not.
    func explanation(recorded: Timestamp, moved: Timestamp) -> String {
        guard recorded != moved else { return "" }
        return " (after moving it back \(EventProblem.describe(microseconds: -microseconds)), "
            + "the device clock's error that \(Self.header) showed)"
    }
}
