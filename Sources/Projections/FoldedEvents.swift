import EngageCore
import EventStore

/// A batch of log events decoded and folded per notification before any stored state is known:
/// the state of each notification's events in the batch alone.
///
/// `NotificationState` is a join-semilattice, so a stored state merged with this batch's state
/// equals the stored state with the batch's events applied one by one. That lets the projector
/// do this part (payload decoding and the fold, most of its own CPU time) for the next batch
/// while the current one is written, outside the transaction that needs the stored states, and
/// with it the read model's changes as if every notification were new.
public struct FoldedEvents: Sendable {
    /// The state of each notification's events in the batch.
    public private(set) var states: [NotificationKey: NotificationState] = [:]
    /// The position of the last event read (nil: the batch is empty).
    public private(set) var last: LogPosition?
    /// Every event read, notification events or not.
    public private(set) var eventCount = 0
    /// Events whose stored payload could not be decoded (never expected; counted, not fatal).
    public private(set) var undecodable = 0
    /// Where the events were read, when read ahead of their batch: the server (`ServerIdentity`)
    /// and the position they follow. A batch takes them only when both are its own.
    var readAhead: (server: ServerIdentity, after: LogPosition)?
    /// The batch's changes if none of its notifications had a stored state: in a catch-up from
    /// an empty read model nearly all there is to it; in live traffic most notifications of a
    /// batch have one, and `EngagementChanges.compute` corrects those.
    let changesIfNew: EngagementChanges

    public init(_ events: [StoredEvent]) {
        self.init(events.map(FoldableEvent.init))
    }

    public init(_ events: [FoldableEvent]) {
        states.reserveCapacity(events.count / 2)
        last = events.last?.position
        eventCount = events.count
        for stored in events {
            // Payloads in the log passed ingestion's checks: the trusted path skips them.
            guard let type = EventType(rawValue: stored.type),
                  let event = try? Event(eventID: stored.eventID, type: type, notificationID: stored.notificationID,
                                         deviceID: stored.deviceID, category: stored.category, occurredAt: stored.occurredAt,
                                         trustedPayloadJSON: stored.payload) else {
                // Experiment lifecycle and decisions share the log but are no notification's events.
                if ExperimentLogEntry.action(ofType: stored.type) == nil { undecodable += 1 }
                continue
            }
            states[NotificationKey(appID: stored.appID, notificationID: stored.notificationID), default: NotificationState()].apply(event)
        }
        changesIfNew = EngagementChanges.ifNew(states, eventCount: eventCount, undecodable: undecodable)
    }
}
