import EngageCore
@testable import Projections
import SeededRandom
import Testing

/// The projector's in-memory fold of a batch's device changes: applied batch after batch to
/// stored rows and sums, the way `DeviceMomentStore` writes them, it must leave exactly the rows
/// and the sums computed from scratch from each device's counts, however notifications come,
/// move between devices and categories, or leave.
@Suite("Device moments folded in memory")
struct DeviceMomentDeltasTests {
    typealias Key = DeviceMomentFold.Key
    typealias Row = DeviceMomentDeltas.Row

    /// The three tables as the store keeps them, with its rules for removing rows.
    struct Tables {
        var devices: [Key: Row] = [:]
        var moments: [DeviceMomentDeltas.CategoryKey: Row] = [:]
        var pairs: [DeviceMomentDeltas.PairKey: Row] = [:]

        mutating func apply(_ changes: [Key: DeviceCategoryCounts]) -> DeviceMomentDeltas {
            let changedDevices = Set(changes.keys.map { DeviceMomentDeltas.DeviceKey(appID: $0.appID, deviceID: $0.deviceID) })
            let stored = devices.filter { changedDevices.contains(DeviceMomentDeltas.DeviceKey(appID: $0.key.appID, deviceID: $0.key.deviceID)) }
            let deltas = DeviceMomentDeltas(changes: changes.filter { !$0.value.isZero }, stored: stored)
            for row in deltas.rows {
                // What decides COPY (new) against the upsert (stored): wrong either way fails in PostgreSQL.
                #expect(row.wasStored == (devices[row.key] != nil), "\(row.key)")
                devices[row.key] = row.isZero ? nil : row.counts
            }
            let names = DeviceMomentStore.momentColumns.map(\.name)
            for (key, delta) in deltas.moments {
                let sums = zip(moments[key] ?? delta.map { _ in 0 }, delta).map { $0 + $1 }
                let noDevice = sums[names.firstIndex(of: "rich_devices")!] == 0 && sums[names.firstIndex(of: "plain_devices")!] == 0
                moments[key] = noDevice ? nil : sums
            }
            let pairNames = DevicePairMomentStore.columns.map(\.name)
            let displayedProducts = ["rich_x_rich_displayed", "rich_x_plain_displayed", "plain_x_rich_displayed", "plain_x_plain_displayed"]
                .map { pairNames.firstIndex(of: $0)! }
            for (key, delta) in deltas.pairs {
                let sums = zip(pairs[key] ?? delta.map { _ in 0 }, delta).map { $0 + $1 }
                pairs[key] = displayedProducts.allSatisfy { sums[$0] == 0 } ? nil : sums
            }
            return deltas
        }

        func categoryMoments() throws -> [CategoryDeviceMoments] {
            let names = DeviceMomentStore.momentColumns.map(\.name)
            return try moments.keys.sorted { ($0.appID, $0.category) < ($1.appID, $1.category) }.map { key in
                let values = Dictionary(uniqueKeysWithValues: zip(names, moments[key]!.map { Int($0) }))
                return try DeviceMomentStore.moments(appID: key.appID, category: key.category, values)
            }
        }

        func pairMoments() throws -> [CategoryPairDeviceMoments] {
            let names = DevicePairMomentStore.columns.map(\.name)
            return try pairs.keys.sorted { [$0.appID, $0.first, $0.second].lexicographicallyPrecedes([$1.appID, $1.first, $1.second]) }
                .map { key in
                    let values = Dictionary(uniqueKeysWithValues: zip(names, pairs[key]!.map { Int($0) }))
                    return try DevicePairMomentStore.moments(appID: key.appID, first: key.first, second: key.second, values)
                }
        }
    }

    /// A displayed notification as the devices' counts see it.
    struct Notification {
        var key: Key
        var presentation: ObservedPresentation
        var counts: FunnelCounts

        var contribution: DeviceCategoryCounts {
            var counts = DeviceCategoryCounts()
            counts.add(self.counts, presentation: presentation)
            return counts
        }
    }

    static func randomNotification(_ generator: inout SeededGenerator) -> Notification {
        let apps = ["app-1", "app-2"], categories = ["new_photo", "chat_message", "promo_sale"]
        var counts = FunnelCounts()
        counts[.displayed] = 1
        for stage in FunnelStage.engagements where Bool.random(using: &generator) { counts[stage] = 1 }
        let key = Key(appID: apps.randomElement(using: &generator)!, category: categories.randomElement(using: &generator)!,
                      deviceID: "device-\(Int.random(in: 0..<6, using: &generator))")
        return Notification(key: key, presentation: Bool.random(using: &generator) ? .rich : .plain, counts: counts)
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func batchAfterBatchTheTablesEqualTheSumsFromScratch(seed: UInt64) throws {
        var generator = SeededGenerator(projectionSeed: seed)
        var notifications: [Notification] = []
        var tables = Tables()
        var removedRows = 0, removedPairs = 0
        for _ in 0..<60 {
            // One batch: new notifications, some moved to another device or category (an
            // earlier event arrived late), some changed, some gone; the changes are netted per
            // device as `EngagementChanges` nets them.
            var changes: [Key: DeviceCategoryCounts] = [:]
            func leave(_ notification: Notification) {
                let counts = notification.contribution
                changes[notification.key] = (changes[notification.key] ?? DeviceCategoryCounts())
                    + DeviceCategoryCounts(rich: .zero - counts.rich, plain: .zero - counts.plain)
            }
            func join(_ notification: Notification) {
                changes[notification.key] = (changes[notification.key] ?? DeviceCategoryCounts()) + notification.contribution
            }
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                let notification = Self.randomNotification(&generator)
                notifications.append(notification)
                join(notification)
            }
            for _ in 0..<Int.random(in: 0...6, using: &generator) where !notifications.isEmpty {
                let index = Int.random(in: notifications.indices, using: &generator)
                leave(notifications[index])
                switch Int.random(in: 0..<4, using: &generator) {
                case 0, 3:
                    notifications.remove(at: index)
                    continue
                case 1: notifications[index] = Self.randomNotification(&generator)
                default:
                    notifications[index].presentation = notifications[index].presentation == .rich ? .plain : .rich
                    notifications[index].counts[.expanded] = 1 - notifications[index].counts[.expanded]
                }
                join(notifications[index])
            }
            let pairsBefore = Set(tables.pairs.keys)
            let deltas = tables.apply(changes)
            removedRows += deltas.rows.filter(\.isZero).count
            removedPairs += pairsBefore.subtracting(tables.pairs.keys).count

            // From scratch: each device's counts, then the sums over devices.
            var truth: [Key: DeviceCategoryCounts] = [:]
            for notification in notifications {
                truth[notification.key] = (truth[notification.key] ?? DeviceCategoryCounts()) + notification.contribution
            }
            #expect(tables.devices == truth.mapValues(DeviceMomentDeltas.row))
            let byCategory = Dictionary(grouping: truth) { [$0.key.appID, $0.key.category] }
            let expected = byCategory.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { key in
                CategoryDeviceMoments(appID: key[0], category: key[1], devices: byCategory[key]!.map(\.value))
            }
            #expect(try tables.categoryMoments() == expected)
            #expect(try tables.pairMoments() == CategoryPairDeviceMoments.pairs(of: truth))
        }
        // The run exercised what is easy to get wrong: rows and pairs that every notification left.
        #expect(removedRows > 0)
        #expect(removedPairs > 0)
        #expect(!tables.pairs.isEmpty)
    }

    @Test func aPairIsOrderedByTheBytesOfItsCategories() {
        // As the table's CHECK (COLLATE "C") wants: "Z" (0x5A) before "a" (0x61), and a decomposed
        // "e\u{301}" (65 CC 81) before "f" (66), which Swift's `<` puts after it (as "é").
        var counts = FunnelCounts()
        counts[.displayed] = 1
        for (first, second) in [("Zulu", "alpha"), ("e\u{301}", "f")] {
            let changes = [Key(appID: "a", category: second, deviceID: "d"): DeviceCategoryCounts(rich: counts),
                           Key(appID: "a", category: first, deviceID: "d"): DeviceCategoryCounts(plain: counts)]
            let deltas = DeviceMomentDeltas(changes: changes, stored: [:])
            #expect(deltas.pairs.keys.map { [Array($0.first.utf8), Array($0.second.utf8)] } == [[Array(first.utf8), Array(second.utf8)]])
        }
    }
}
