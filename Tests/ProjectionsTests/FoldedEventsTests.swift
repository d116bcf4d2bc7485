import EngageCore
import EventStore
@testable import Projections
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

    /// The sums the read model must hold for `items`, built without `FoldedEvents` or
    /// `EngagementChanges`: each notification's events folded with `NotificationState(folding:)`
    /// and its contributions added once, where its final state puts them.
    static func reference(_ items: [AppendItem]) -> Sums {
        let layout = LatencyHistogram.Layout.standard
        var sums = Sums()
        let byNotification = Dictionary(grouping: items) { NotificationKey(appID: $0.appID, notificationID: $0.event.notificationID) }
        for (key, group) in byNotification {
            let state = NotificationState(folding: group.map(\.event))
            if let engagement = state.engagementContribution {
                sums.engagement[EngagementChanges.EngagementKey(appID: key.appID, bucket: engagement.bucket), default: .zero] += engagement.counters
                for (actionID, count) in engagement.counters.actions where count != 0 {
                    sums.actions[EngagementChanges.ActionKey(appID: key.appID, bucket: engagement.bucket, actionID: actionID), default: 0] += count
                }
                if engagement.bucket.presentation != .unknown {
                    var counts = DeviceCategoryCounts()
                    counts.add(engagement.counters.funnel, presentation: engagement.bucket.presentation)
                    let device = DeviceMomentFold.Key(appID: key.appID, category: engagement.bucket.category, deviceID: state.deviceID ?? "")
                    sums.devices[device] = (sums.devices[device] ?? DeviceCategoryCounts()) + counts
                }
            }
            if let telemetry = state.telemetryContribution {
                let bucket = EngagementChanges.TelemetryKey(appID: key.appID, bucket: telemetry.bucket)
                sums.telemetry[bucket, default: TelemetryContribution.Counters()] += telemetry.counters
                for (milliseconds, count) in telemetry.counters.downloadMS {
                    sums.downloads[bucket, default: [:]][layout.index(of: Double(milliseconds)), default: 0] += Int64(count)
                }
                for (milliseconds, count) in telemetry.counters.processingMS {
                    sums.processing[bucket, default: [:]][layout.index(of: Double(milliseconds)), default: 0] += Int64(count)
                }
            }
        }
        return sums
    }

    /// Projects `batches` one after another the way the projector does (each folded alone, then
    /// corrected with the states stored before it): the summed changes and the states after.
    static func project(_ batches: [[StoredEvent]], from start: [NotificationKey: NotificationState] = [:])
        -> (sums: Sums, states: [NotificationKey: NotificationState], corrected: Int) {
        var sums = Sums()
        var states = start
        var corrected = 0
        for events in batches {
            let batch = FoldedEvents(events)
            let known = states.filter { batch.states[$0.key] != nil }
            corrected += known.count
            let changes = EngagementChanges.compute(batch, known: known)
            #expect(changes.created.isDisjoint(with: known.keys))
            // Sums are added in place: an entry that came to 0 must still be removed, as `+` does.
            #expect(changes.engagement.values.allSatisfy { !$0.actions.values.contains(0) })
            #expect(changes.telemetry.values.allSatisfy { delta in
                [delta.counters.outcomes.values.contains(0), delta.counters.downloadMS.values.contains(0),
                 delta.counters.processingMS.values.contains(0)].allSatisfy { !$0 }
            })
            sums.add(changes)
            states.merge(changes.states) { _, new in new }
        }
        return (sums, states, corrected)
    }

    @Test(arguments: [1, 7, 40])
    func batchByBatchEqualsOneFold(batchSize: Int) {
        let items = ProjectionFixtures.scrambled(ProjectionFixtures.events(notifications: 60, seed: 3), seed: 11)
        let events = Self.stored(items)
        let batches = stride(from: 0, to: events.count, by: batchSize).map { Array(events[$0..<min($0 + batchSize, events.count)]) }

        let projected = Self.project(batches)
        let expected = Self.reference(items)
        let byNotification = Dictionary(grouping: items) { NotificationKey(appID: $0.appID, notificationID: $0.event.notificationID) }
        #expect(projected.states == byNotification.mapValues { NotificationState(folding: $0.map(\.event)) })
        #expect(projected.sums.settled() == expected.settled())
        #expect(!expected.engagement.isEmpty && !expected.actions.isEmpty && !expected.devices.isEmpty && !expected.downloads.isEmpty)
        if batchSize > 1 { #expect(projected.corrected > 0) }
    }

    /// A batch that repeats events already folded (a retried append, the same event IDs) merges
    /// into states equal to the stored ones: nothing to write and no counter changes.
    @Test
    func repeatedEventsChangeNothing() {
        let items = ProjectionFixtures.scrambled(ProjectionFixtures.events(notifications: 20, seed: 5), seed: 13)
        let events = Self.stored(items)
        let first = Self.project([Array(events.prefix(40)), Array(events.dropFirst(40))])

        let repeated = FoldedEvents(Array(events.prefix(30)))
        let known = first.states.filter { repeated.states[$0.key] != nil }
        #expect(!known.isEmpty && known.count == repeated.states.count)
        let changes = EngagementChanges.compute(repeated, known: known)
        #expect(changes.states.isEmpty)
        #expect(changes.created.isEmpty)
        var sums = Sums()
        sums.add(changes)
        #expect(sums.settled() == Sums())
        #expect(changes.eventCount == 30)
    }

    /// The model accepts events of one notification on different devices and categories (events
    /// normally agree; nothing rejects those that do not), and the notification's device row and
    /// bucket are those of its earliest event. A later batch's state alone can then have another
    /// origin than the merged state (its events are later: the take-back of its changes as new
    /// must use its own device and category), or move the origin (an earlier event arrives late).
    @Test
    func aLaterBatchOnAnotherDeviceIsCountedWhereTheEarliestEventPutsIt() {
        let at = ProjectionFixtures.start
        func item(_ n: UInt64, _ seconds: Int64, device: String, category: String, _ details: EventDetails) -> AppendItem {
            AppendItem(appID: "app-1", event: Event(eventID: ProjectionFixtures.id(77, n), notificationID: "moved", deviceID: device,
                                                    category: category, occurredAt: at.adding(microseconds: seconds * 1_000_000), details: details))
        }
        let delivered = DeliveredDetails(attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 120_000, source: .network, downloadMS: 700),
                                         outcome: .attached, processingMS: 900, timeWillExpire: false, network: .wifi, strategy: .full)
        // Batch 1 on d1: the stored origin. Batch 2's later events on d2 (another category, a
        // second display): their state alone counts on d2, the merged one on d1. Batch 3's earlier event on d3
        // moves the origin to d3 and the notification's device row with it.
        let first = [item(1, 10, device: "d1", category: "new_photo", .displayed(DisplayedDetails(presentation: .rich, attachmentKind: .image)))]
        let second = [item(5, 15, device: "d2", category: "chat_message", .displayed(DisplayedDetails(presentation: .plain, attachmentKind: .noAttachment))),
                      item(2, 20, device: "d2", category: "chat_message", .expanded),
                      item(3, 30, device: "d2", category: "chat_message", .action(ActionDetails(actionID: "like")))]
        let third = [item(4, 0, device: "d3", category: "promo_sale", .delivered(delivered))]

        let key = NotificationKey(appID: "app-1", notificationID: "moved")
        let afterTwo = Self.project([Self.stored(first), Self.stored(second)])
        let secondAlone = FoldedEvents(Self.stored(second)).states[key]
        #expect(secondAlone?.deviceID == "d2" && secondAlone?.category == "chat_message")
        #expect(secondAlone?.engagementContribution?.bucket.presentation == .plain)
        #expect(afterTwo.states[key]?.deviceID == "d1" && afterTwo.states[key]?.category == "new_photo")
        #expect(afterTwo.sums.settled() == Self.reference(first + second).settled())

        let all = Self.project([Self.stored(first), Self.stored(second), Self.stored(third)])
        #expect(all.states[key]?.deviceID == "d3" && all.states[key]?.category == "promo_sale")
        let expected = Self.reference(first + second + third).settled()
        #expect(all.sums.settled() == expected)
        #expect(expected.devices.keys.map(\.deviceID) == ["d3"])
    }
}
