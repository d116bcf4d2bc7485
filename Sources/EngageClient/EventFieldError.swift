/// An event no request could carry as recorded; `record...` throws it, and the event is not queued.
/// The server would refuse it too, but only after it had waited in the queue, and a time outside
/// the years RFC 3339 can write has no wire form at all.
public struct EventFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The field's name on the wire (docs/events.md), such as `occurred_at`.
    public var field: String
    public var problem: String

    public var description: String { "engage event: \(field) \(problem)" }
}
