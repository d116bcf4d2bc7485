import Foundation

/// How far a request's `occurred_at` values move to make up for a device clock that is off.
///
/// `occurred_at` is the device's clock. A client that says what its clock read as it sent the
/// request (`Engage-Sent-At`) lets the server measure that clock against its own: the difference is
/// the clock's error less the request's transit.
///
/// An event's time is on one of two clocks (`Engage-Occurred-At-Clock`):
/// - **The recording clock** (the default): the clock as it read when the event was recorded,
///   which may have been set since. When the sending clock is more than `tolerance` ahead (no
///   transit makes a clock look ahead), each such event whose time is itself more than `tolerance`
///   ahead of the server's clock, a time that cannot be right, moves back by that difference: it is
///   no longer rejected as in the future (and lost), nor filed hours late. An event whose time could
///   be right stays as recorded: one recorded before the clock was set ahead, or given its time by
///   the app. A clock behind is left alone: its events are accepted for `--max-past-days` and lose
///   nothing.
/// - **The sending clock**: the client knew how far its clock moved since it recorded the event (it
///   kept the time since boot beside it) and put the time on the clock it sends with. Then the
///   clock's whole error is known to apply, so every such event moves by it, ahead or behind: an
///   event recorded while the clock ran ahead and sent after it was put right is no longer in the
///   future, and one recorded while it ran behind is no longer filed early.
///
/// A clock more than `largest` off is a clock set by hand to another day, not an error to undo:
/// its events are judged as sent. Because a retry may be moved differently from its original (the
/// clock put right in between), the idempotency window is longer by `largest` (the window a prune
/// keeps).
public struct ClockCorrection: Sendable, Equatable {
    /// The request header with the device's clock as it sent, an RFC 3339 time.
    public static let header = "Engage-Sent-At"
    /// The request header saying which events' times are on the sending clock.
    public static let clockHeader = "Engage-Occurred-At-Clock"
    /// A clock this little off is left alone.
    public static let tolerance: Duration = .seconds(60)
    /// A clock further off than this is left alone: half a day covers most clocks set to another
    /// time zone, and keeps the idempotency window under 31 days with the default limits.
    public static let largest: Duration = .seconds(12 * 3600)

    /// Which events of a request have their `occurred_at` on the sending clock.
    public enum SendingClockEvents: Sendable, Equatable {
        case noEvent
        /// Every event but those at these indices (of the request, as `rejected` counts them).
        case everyEvent(except: Set<Int>)

        func contains(_ index: Int) -> Bool {
            switch self {
            case .noEvent: false
            case .everyEvent(let except): !except.contains(index)
            }
        }
    }

    /// Added to each `occurred_at` on the recording clock ahead of the server's clock: zero, or
    /// negative for a clock ahead.
    public let microseconds: Int64
    /// Added to each `occurred_at` on the sending clock: zero, or the clock's error undone, either way.
    public let sendingClockMicroseconds: Int64
    public let eventsOnSendingClock: SendingClockEvents

    public static let none = ClockCorrection(microseconds: 0)

    init(microseconds: Int64, sendingClockMicroseconds: Int64 = 0, eventsOnSendingClock: SendingClockEvents = .noEvent) {
        self.microseconds = microseconds
        self.sendingClockMicroseconds = sendingClockMicroseconds
        self.eventsOnSendingClock = eventsOnSendingClock
    }

    /// The correction for a request whose device clock read `sentAt` as it sent, received when
    /// the server's clock read `receivedAt`; its events on the recording clock.
    public init(sentAt: Timestamp, receivedAt: Timestamp) {
        let ahead = sentAt.microsecondsSinceEpoch - receivedAt.microsecondsSinceEpoch
        let off = ahead.magnitude > UInt64(EventLimits.microseconds(Self.tolerance))
            && ahead.magnitude <= UInt64(EventLimits.microseconds(Self.largest))
        self.init(microseconds: off && ahead > 0 ? -ahead : 0, sendingClockMicroseconds: off ? -ahead : 0)
    }

    /// The same correction with `events` on the sending clock.
    public func with(eventsOnSendingClock events: SendingClockEvents) -> ClockCorrection {
        ClockCorrection(microseconds: microseconds, sendingClockMicroseconds: sendingClockMicroseconds, eventsOnSendingClock: events)
    }

    /// The correction a request's `Engage-Sent-At` value asks for: none without the header, nil
    /// when the value is not an RFC 3339 time.
    public static func requested(by header: String?, receivedAt: Timestamp) -> ClockCorrection? {
        guard let header else { return ClockCorrection.none }
        return Timestamp(rfc3339: header).map { ClockCorrection(sentAt: $0, receivedAt: receivedAt) }
    }

    /// The events an `Engage-Occurred-At-Clock` value puts on the sending clock: `recording` (or
    /// no header) none, `sending` all, `sending; except=0,3` all but those; nil for anything else.
    public static func eventsOnSendingClock(header: String?) -> SendingClockEvents? {
        guard let header else { return .noEvent }
        let parts = header.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
        let clock = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
        if parts.count == 1 && clock == "recording" { return .noEvent }
        guard clock == "sending" else { return nil }
        guard parts.count == 2 else { return .everyEvent(except: []) }
        let parameter = parts[1].trimmingCharacters(in: .whitespaces)
        guard parameter.lowercased().hasPrefix("except=") else { return nil }
        var except = Set<Int>()
        for index in parameter.dropFirst("except=".count).split(separator: ",", omittingEmptySubsequences: false) {
            let digits = index.trimmingCharacters(in: .whitespaces)
            // Seven digits are more events than any request may hold.
            guard (1...7).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(digits) else { return nil }
            except.insert(value)
        }
        return .everyEvent(except: except)
    }

    /// Whether the request's event at `index` has its time on the sending clock.
    public func isOnSendingClock(eventAt index: Int) -> Bool {
        eventsOnSendingClock.contains(index)
    }

    /// `recorded` moved by the clock's error: always when it is on the sending clock, else (on the
    /// recording clock) only when it is more than `tolerance` ahead of `now`, as it cannot be right.
    public func applied(to recorded: Timestamp, now: Timestamp, onSendingClock: Bool = false) -> Timestamp {
        if onSendingClock { return recorded.adding(microseconds: sendingClockMicroseconds) }
        guard microseconds != 0,
              recorded.microsecondsSinceEpoch - now.microsecondsSinceEpoch > EventLimits.microseconds(Self.tolerance)
        else { return recorded }
        return recorded.adding(microseconds: microseconds)
    }

    /// Whether some event of the request may move.
    public var movesTimes: Bool {
        microseconds != 0 || (sendingClockMicroseconds != 0 && eventsOnSendingClock != .noEvent)
    }

    /// Words for a problem about an `occurred_at` moved from `recorded`, empty when it was not.
    func explanation(recorded: Timestamp, moved: Timestamp) -> String {
        let change = moved.microsecondsSinceEpoch - recorded.microsecondsSinceEpoch
        guard change != 0 else { return "" }
        return " (after moving it \(change < 0 ? "back" : "forward") \(EventProblem.describe(microseconds: abs(change))), "
            + "the device clock's error that \(Self.header) showed)"
    }
}
