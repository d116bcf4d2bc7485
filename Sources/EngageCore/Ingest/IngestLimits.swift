/// What one ingestion request may contain.
public struct IngestLimits: Sendable, Equatable {
    /// Events per request; more rejects the whole request.
    public var maxEvents: Int
    /// What each of its events may be.
    public var event: EventLimits

    public init(maxEvents: Int = 1000, event: EventLimits = EventLimits()) {
        self.maxEvents = maxEvents
        self.event = event
    }
}
