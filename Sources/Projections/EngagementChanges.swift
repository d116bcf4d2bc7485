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

        /// Adds a notification's signed telemetry, in place (the sums grow with the batch).
        mutating func add(_ delta: TelemetryContribution.Counters) {
            let layout = LatencyHistogram.Layout.standard
            counters.add(delta)
            for (milliseconds, count) in delta.downloadMS {
                downloadBuckets[layout.index(of: Double(milliseconds)), default: 0] += Int64(count)
            }
            for (milliseconds, count) in delta.processingMS {
                processingBuckets[layout.index(of: Double(milliseconds)), default: 0] += Int64(count)
            }
        }
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
        compute(FoldedEvents(events), known: known)
    }

    /// Merges a batch folded per notification into the states before it (`known`, as above) and
    /// accumulates the resulting bucket changes.
    ///
    /// Starts from the batch's changes as if every notification were new (computed with the
    /// fold, before the stored states were known) and corrects only the notifications that have
    /// a stored state: the counters are signed sums, so taking back a notification's changes as
    /// new and adding those from its stored state to the merged one gives the same sums.
    public static func compute(_ batch: FoldedEvents, known: [NotificationKey: NotificationState]) -> EngagementChanges {
        var changes = batch.changesIfNew
        let empty = NotificationState()
        for (key, stored) in known {
            guard let folded = batch.states[key] else { continue }
            changes.created.remove(key)
            changes.states[key] = nil
            changes.addContributions(app: key.appID, from: folded, to: empty)
            let merged = stored.merging(folded)
            guard merged != stored else { continue }
            changes.states[key] = merged
            changes.addContributions(app: key.appID, from: stored, to: merged)
        }
        return changes
    }

    /// The changes of `states` if none of them had a stored state.
    static func ifNew(_ states: [NotificationKey: NotificationState], eventCount: Int, undecodable: Int) -> EngagementChanges {
        var changes = EngagementChanges()
        changes.eventCount = eventCount
        changes.undecodable = undecodable
        changes.states = states
        changes.created = Set(states.keys)
        for (key, state) in states {
            changes.addContributions(app: key.appID, ofNew: state)
        }
        return changes
    }

    /// A new notification's contributions join the counters: `addContributions(from: empty, to:)`
    /// without differences against nothing, for every notification of a catch-up.
    private mutating func addContributions(app: String, ofNew state: NotificationState) {
        if let engagement = state.engagementContribution {
            add(engagement.counters, to: engagement.bucket, app: app)
            addDevices(app: app, from: nil, to: (device: state.deviceID ?? "", contribution: engagement))
        }
        if let telemetry = state.telemetryContribution {
            add(telemetry.counters, to: telemetry.bucket, app: app)
        }
    }

    /// A notification's contributions at `old` leave the counters and those at `new` join them.
    private mutating func addContributions(app: String, from old: NotificationState, to new: NotificationState) {
        // Built once per state: a contribution is a few allocations (bucket, funnel, actions).
        let before = old.engagementContribution, after = new.engagementContribution
        for delta in EngagementContribution.difference(from: before, to: after) {
            add(delta.counters, to: delta.bucket, app: app)
        }
        addDevices(app: app, from: before.map { (device: old.deviceID ?? "", contribution: $0) },
                   to: after.map { (device: new.deviceID ?? "", contribution: $0) })
        for delta in TelemetryContribution.difference(from: old.telemetryContribution, to: new.telemetryContribution) {
            add(delta.counters, to: delta.bucket, app: app)
        }
    }

    private mutating func add(_ counters: EngagementContribution.Counters, to bucket: EngagementContribution.Bucket, app: String) {
        engagement[EngagementKey(appID: app, bucket: bucket), default: .zero].add(counters)
        for (actionID, count) in counters.actions where count != 0 {
            actions[ActionKey(appID: app, bucket: bucket, actionID: actionID), default: 0] += count
        }
    }

    /// The notification's old contribution leaves its device's counts, its new one joins them.
    private mutating func addDevices(app: String, from old: DeviceMomentFold.Side, to new: DeviceMomentFold.Side) {
        for change in DeviceMomentFold.changes(appID: app, from: old, to: new) {
            devices[change.key] = (devices[change.key] ?? DeviceCategoryCounts()) + change.counts
        }
    }

    private mutating func add(_ counters: TelemetryContribution.Counters, to bucket: TelemetryContribution.Bucket, app: String) {
        telemetry[TelemetryKey(appID: app, bucket: bucket), default: TelemetryDelta()].add(counters)
    }
}
