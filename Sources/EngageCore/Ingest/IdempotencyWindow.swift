/// How long after an event was recorded a retry of it may still arrive and must be found a
/// duplicate, given what ingestion accepts.
///
/// A retry carries its original's `occurred_at`. When the original was recorded, `occurred_at`
/// was at most `maxFuture` ahead of the clock; a retry is accepted only while `occurred_at` is at
/// most `maxPast` old. So no retry of an event recorded more than `maxPast + maxFuture` ago can be
/// stored, and the log may forget the event and its id; but for the device clock's correction
/// (`ClockCorrection`), which may have moved the original back by up to `ClockCorrection.largest`
/// and not the retry (its clock put right in between), so that much more. An event on the sending
/// clock comes to its real time on every attempt whose clock was off by at most `largest`; only a
/// device whose clock was more than `largest` off at one attempt (set by hand to another day) and
/// within it at another may move a retry further, by up to three times `largest`, which the window
/// does not cover: that device would also have to hold the event unsent for most of `maxPast`
/// after a lost answer. `clockMargin` covers the difference
/// between the clocks of the engage servers (which check `occurred_at`) and of PostgreSQL (which
/// sets `recorded_at`).
public struct IdempotencyWindow: Sendable, Equatable {
    public static let clockMargin: Duration = .seconds(3600)

    public var limits: EventLimits

    public init(limits: EventLimits = EventLimits()) {
        self.limits = limits
    }

    /// Events recorded less than this long ago must stay in the log.
    public var length: Duration { limits.maxPast + limits.maxFuture + ClockCorrection.largest + Self.clockMargin }
}
