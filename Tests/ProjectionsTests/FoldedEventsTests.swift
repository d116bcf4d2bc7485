import EngageCore
import EventStore
import Projections
import Testing

/// The projector folds the next batch per notification before it knows the stored states, with
/// the changes as if every notification were new, and corrects those that have a stored state.
/// Batch by batch that must add up to one fold of all the events.
@Suite("Folded events")
struct FoldedEventsTests {
    static func stored(_ items: [AppendItem]) -> [StoredEvent] {
        items.enumerated().map { index, item in
            let event = item.event
            return StoredEvent(position: LogPosition(transactionID: 1, sequence: Int64(index)), eventID: event.eventID,
                               appID: item.appID, notificationID: event.notificationID, type: event.type.rawValue,
                               category: event.category, deviceID: event.deviceID, occurredAt: event.occurredAt,
                               recordedAt: event.occurredAt, experimentID: nil, experimentArm: nil, payload: event.payloadJSON)
        }
    }

    /// The sums of changes; `settled` leaves out the entries that add up to nothing.
    struct Sums: Equatable {
        var engagement: [EngagementChanges.EngagementKey: EngagementContribution.Counters] = [:]
        var actions: [EngagementChanges.ActionKey: Int] = [:]
        var devices: [DeviceMomentFold.Key: DeviceCategoryCounts] = [:]
        var telemetry: [EngagementChanges.TelemetryKey: TelemetryContribution.Counters] = [:]
        var downloads: [EngagementChanges.TelemetryKey: [Int: Int64]] = [:]
        var processing: [EngagementChanges.TelemetryKey: [Int: Int64]] = [:]

        mutating func add(_ changes: EngagementChanges) {
            for (key, counters) in changes.engagement { engagement[key, default: .zero] += counters }
            for (key, count) in changes.actions { actions[key, default: 0] += count }
            for (key, counts) in changes.devices { devices[key] = (devices[key] ?? DeviceCategoryCounts()) + counts }
            for (key, delta) in changes.telemetry {
                telemetry[key, default: TelemetryContribution.Counters()] += delta.counters
                for (bucket, count) in delta.downloadBuckets { downloads[key, default: [:]][bucket, default: 0] += count }
                for (bucket, count) in delta.processingBuckets { processing[key, default: [:]][bucket, default: 0] += count }
            }
        }

        func settled() -> Sums {
            Sums(engagement: engagement.filter { $0.value != .zero }, actions: actions.filter { $0.value != 0 },
                 devices: devices.filter { !$0.value.isZero }, telemetry: telemetry.filter { $0.value != TelemetryContribution.Counters() },
                 downloads: downloads.mapValues { $0.filter { $0.value != 0 } }.filter { !$0.value.isEmpty },
                 processing: processing.mapValues { $0.filter { $0.value != 0 } }.filter { !$0.value.isEmpty })
        }
    }

    @Test(arguments: [1, 7, 40])
    func batchByBatchEqualsOneFold(batchSize: Int) {
        let items = ProjectionFixtures.scrambled(ProjectionFixtures.events(notifications: 60, seed: 3), seed: 11)
        let events = Self.stored(items)

        var whole = Sums()
        let all = EngagementChanges.compute(events, known: [:])
        whole.add(all)

        var batched = Sums()
        var states: [NotificationKey: NotificationState] = [:]
        var corrected = 0
        for start in stride(from: 0, to: events.count, by: batchSize) {
            let batch = FoldedEvents(Array(events[start..<min(start + batchSize, events.count)]))
            let known = states.filter { batch.states[$0.key] != nil }
            corrected += known.count
            let changes = EngagementChanges.compute(batch, known: known)
            #expect(changes.created.isDisjoint(with: known.keys))
            batched.add(changes)
            states.merge(changes.states) { _, new in new }
        }
        #expect(states == all.states)
        #expect(batched.settled() == whole.settled())
        let settled = whole.settled()
        #expect(!settled.engagement.isEmpty && !settled.actions.isEmpty && !settled.devices.isEmpty && !settled.downloads.isEmpty)
        if batchSize > 1 { #expect(corrected > 0) }
    }
}
