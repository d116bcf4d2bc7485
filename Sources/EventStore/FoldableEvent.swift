import EngageCore

/// The columns of a stored event that a notification's fold reads: a `StoredEvent` without
/// `recorded_at` and the experiment columns (the payload holds the experiment tag), which the
/// projector would decode for every event and never use.
public struct FoldableEvent: Sendable, Equatable {
    public var position: LogPosition
    public var eventID: EventID
    public var appID, notificationID, type, category, deviceID: String
    public var occurredAt: Timestamp
    /// jsonb as PostgreSQL renders it: same content as written, keys reordered.
    public var payload: [UInt8]
}

extension FoldableEvent {
    /// The fold's columns of a full row (the memberwise init is EventStore's, which reads them).
    public init(_ stored: StoredEvent) {
        self.init(position: stored.position, eventID: stored.eventID, appID: stored.appID,
                  notificationID: stored.notificationID, type: stored.type, category: stored.category,
                  deviceID: stored.deviceID, occurredAt: stored.occurredAt, payload: stored.payload)
    }
}
