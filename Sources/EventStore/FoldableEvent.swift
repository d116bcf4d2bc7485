import EngageCore

/// The columns of a stored event that a notification's fold reads: a `StoredEvent` without
/// `recorded_at` and the experiment columns (the payload holds the experiment tag), which the
/// projector would decode for every event and never use.
public struct FoldableEvent: Sendable, Equatable {
    public var position: LogPosition
    public var eventID: EventID
    public var appID: String
    public var notificationID: String
    public var type: String
    public var category: String
    public var deviceID: String
    public var occurredAt: Timestamp
    /// jsonb as PostgreSQL renders it: same content as written, keys reordered.
    public var payload: [UInt8]

    public init(position: LogPosition, eventID: EventID, appID: String, notificationID: String, type: String,
                category: String, deviceID: String, occurredAt: Timestamp, payload: [UInt8]) {
        self.position = position
        self.eventID = eventID
        self.appID = appID
        self.notificationID = notificationID
        self.type = type
        self.category = category
        self.deviceID = deviceID
        self.occurredAt = occurredAt
        self.payload = payload
    }

    public init(_ stored: StoredEvent) {
        self.init(position: stored.position, eventID: stored.eventID, appID: stored.appID,
                  notificationID: stored.notificationID, type: stored.type, category: stored.category,
                  deviceID: stored.deviceID, occurredAt: stored.occurredAt, payload: stored.payload)
    }
}
