import EngageCore

/// An event as the log holds it: its core fields as columns and the type-specific rest as the
/// JSON payload (decoded by EngageCore when needed).
public struct StoredEvent: Sendable, Equatable {
    public var position: LogPosition
    public var eventID: EventID
    public var appID: String
    public var notificationID: String
    public var type: String
    public var category: String
    public var deviceID: String
    public var occurredAt: Timestamp
    public var recordedAt: Timestamp
    public var experimentID: String?
    public var experimentArm: String?
    /// jsonb as PostgreSQL renders it: same content as written, keys reordered.
    public var payload: [UInt8]

    public init(position: LogPosition, eventID: EventID, appID: String, notificationID: String, type: String,
                category: String, deviceID: String, occurredAt: Timestamp, recordedAt: Timestamp,
                experimentID: String?, experimentArm: String?, payload: [UInt8]) {
        self.position = position
        self.eventID = eventID
        self.appID = appID
        self.notificationID = notificationID
        self.type = type
        self.category = category
        self.deviceID = deviceID
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt
        self.experimentID = experimentID
        self.experimentArm = experimentArm
        self.payload = payload
    }
}

/// One event to append, with the app it belongs to (from the API key, never from the body).
public struct AppendItem: Sendable, Equatable {
    public var appID: String
    public var event: Event

    public init(appID: String, event: Event) {
        self.appID = appID
        self.event = event
    }
}

/// What happened to each item of an appended batch, in the batch's order.
public struct AppendResult: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// Stored by this append.
        case stored
        /// Its event id was already in the log (or earlier in the same batch); nothing was stored.
        case duplicate
        /// Its event id is held by an event of another app (in the log, or earlier in the same
        /// group): nothing was stored, and this app's event is not in the log.
        case idOfAnotherApp
        /// PostgreSQL refused its row for its data (SQLSTATE class 22 or 23, `sqlState`): not
        /// stored, and sent again unchanged it is refused the same way
        /// (`EventStore.appendIsolatingRefusedRows`).
        case refused(sqlState: String)
    }

    public var outcomes: [Outcome]

    public init(outcomes: [Outcome]) {
        self.outcomes = outcomes
    }

    public var storedCount: Int { outcomes.count(where: { $0 == .stored }) }
    public var duplicateCount: Int { outcomes.count(where: { $0 == .duplicate }) }
    /// Indices of the items whose id another app's event holds.
    public var itemsOfAnotherAppsID: [Int] { outcomes.indices.filter { outcomes[$0] == .idOfAnotherApp } }
    /// Each item PostgreSQL refused, with the SQLSTATE it gave.
    public var refusedItems: [(item: Int, sqlState: String)] {
        outcomes.indices.compactMap { item in
            guard case .refused(let sqlState) = outcomes[item] else { return nil }
            return (item, sqlState)
        }
    }
}
