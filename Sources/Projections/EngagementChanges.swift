import EngageCore
import EventStore

/// A notification in the read model: its app and notification id.
public struct NotificationKey: Sendable, Hashable {
    public var appID: String
    public var notificationID: String

    public init(appID: String, notificationID: String) {
        self.appID = appID
        self.notificationID = notificationID
    }
}

/// What one batch of log events changes in the engagement read model: the notifications' new
/// states and the signed counter changes per bucket. Pure: computing it does no I/O.
public struct EngagementChanges: Sendable {
    public struct EngagementKey: Sendable, Hashable {
        public var appID: String
        public var bucket: EngagementContribution.Bucket
    }

    public struct ActionKey: Sendable, Hashable {
        public var appID: String
        public var bucket: EngagementContribution.Bucket
        public var actionID: String
    }

    public struct TelemetryKey: Sendable, Hashable {
        public var appID: String
        public var bucket: TelemetryContribution.Bucket
    }

    /// Telemetry counters with the latency maps turned into histogram bucket counts.
    public struct TelemetryDelta: Sendable, Equatable {
        public var counters = TelemetryContribution.Counters()
        public var downloadBuckets: [Int: Int64] = [:]
        public var processingBuckets: [Int: Int64] = [:]
    }

    public internal(set) var states: [NotificationKey: NotificationState] = [:]
    /// The keys of `states` that had no stored state before the batch (new rows to insert).
    public internal(set) var created: Set<NotificationKey> = []
    public internal(set) var engagement: [EngagementKey: EngagementContribution.Counters] = [:]
    public internal(set) var actions: [ActionKey: Int] = [:]
    public internal(set) var telemetry: [TelemetryKey: TelemetryDelta] = [:]
    /// Signed changes of each device's counts per category (`engagement_devices`).
    public internal(set) var devices: [DeviceMomentFold.Key: DeviceCategoryCounts] = [:]
    public internal(set) var eventCount = 0
    /// Events whose stored payload could not be decoded (never expected; counted, not fatal).
    public internal(set) var undecodable = 0

    public init() {}

    /// Folds `events` into the states they belong to (`known` gives the states before the batch:
    /// every stored state of the batch's notifications, so that one absent is new) and
    /// accumulates the resulting bucket changes.
    public static func compute(_ events: [StoredEvent], known: [NotificationKey: NotificationState]) -> EngagementChanges {
        var changes = EngagementChanges()
        var before: [NotificationKey: NotificationState] = [:]
        var after: [NotificationKey: NotificationState] = [:]
        before.reserveCapacity(known.count + 16)
        after.reserveCapacity(known.count + 16)
        changes.states.reserveCapacity(known.count + 16)
        for stored in events {
            changes.eventCount += 1
            guard let type = EventType(rawValue: stored.type),
                  let event = try? Event(eventID: stored.eventID, type: type, notificationID: stored.notificationID,
                                         deviceID: stored.deviceID, category: stored.category, occurredAt: stored.occurredAt,
                                         payloadJSON: stored.payload) else {
                // Experiment lifecycle and decisions share the log but are no notification's events.
                if ExperimentLogEntry.action(ofType: stored.type) == nil { changes.undecodable += 1 }
                continue
            }
            let key = NotificationKey(appID: stored.appID, notificationID: stored.notificationID)
            if after[key] == nil {
                let existing = known[key] ?? NotificationState()
                before[key] = existing
                after[key] = existing
            }
            after[key]!.apply(event)
        }
        for (key, newState) in after {
            let oldState = before[key]!
            guard newState != oldState else { continue }
            changes.states[key] = newState
            if known[key] == nil { changes.created.insert(key) }
            changes.add(EngagementContribution.difference(from: oldState.engagementContribution, to: newState.engagementContribution),
                        app: key.appID)
            changes.addDevices(app: key.appID, from: oldState, to: newState)
            changes.add(TelemetryContribution.difference(from: oldState.telemetryContribution, to: newState.telemetryContribution),
                        app: key.appID)
        }
        return changes
    }

    private mutating func add(_ deltas: [EngagementContribution.Delta], app: String) {
        for delta in deltas {
            let key = EngagementKey(appID: app, bucket: delta.bucket)
            engagement[key, default: .zero] += delta.counters
            for (actionID, count) in delta.counters.actions where count != 0 {
                actions[ActionKey(appID: app, bucket: delta.bucket, actionID: actionID), default: 0] += count
            }
        }
    }

    /// The notification's old contribution leaves its device's counts, its new one joins them.
    private mutating func addDevices(app: String, from old: NotificationState, to new: NotificationState) {
        let before = old.engagementContribution.map { (device: old.deviceID ?? "", contribution: $0) }
        let after = new.engagementContribution.map { (device: new.deviceID ?? "", contribution: $0) }
        for change in DeviceMomentFold.changes(appID: app, from: before, to: after) {
            devices[change.key] = (devices[change.key] ?? DeviceCategoryCounts()) + change.counts
        }
    }

    private mutating func add(_ deltas: [TelemetryContribution.Delta], app: String) {
        let layout = LatencyHistogram.Layout.standard
        for delta in deltas {
            let key = TelemetryKey(appID: app, bucket: delta.bucket)
            var entry = telemetry[key] ?? TelemetryDelta()
            entry.counters += delta.counters
            for (milliseconds, count) in delta.counters.downloadMS {
                entry.downloadBuckets[layout.index(of: Double(milliseconds)), default: 0] += Int64(count)
            }
            for (milliseconds, count) in delta.counters.processingMS {
                entry.processingBuckets[layout.index(of: Double(milliseconds)), default: 0] += Int64(count)
            }
            telemetry[key] = entry
        }
    }
}
