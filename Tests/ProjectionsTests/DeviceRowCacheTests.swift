import EngageCore
@testable import Projections
import SeededRandom
import Testing

/// The device rows the projector keeps between batches: batch after batch, what the cache gives
/// for the changed devices must be exactly what `engagement_devices` holds for them (every
/// category of each), whether it knows every device (a catch-up from an empty table) or must
/// read those it forgot or never saw.
@Suite("Device rows cached between batches")
struct DeviceRowCacheTests {
    typealias Key = DeviceMomentFold.Key
    typealias Notification = DeviceMomentDeltasTests.Notification

    @Test(arguments: [(seed: 1, limit: 1_000, startsEmpty: true), (seed: 2, limit: 5, startsEmpty: true),
                      (seed: 3, limit: 1_000, startsEmpty: false)] as [(seed: UInt64, limit: Int, startsEmpty: Bool)])
    func theCachedRowsEqualTheStoredRowsBatchAfterBatch(seed: UInt64, limit: Int, startsEmpty: Bool) throws {
        var generator = SeededGenerator(projectionSeed: seed)
        var notifications: [Notification] = []
        // The table; one that does not start empty holds a row the cache has not seen.
        var table: [Key: DeviceMomentDeltas.Row] = [:]
        if !startsEmpty {
            let earlier = DeviceMomentDeltasTests.randomNotification(&generator)
            notifications.append(earlier)
            table[earlier.key] = DeviceMomentDeltas.row(earlier.contribution)
        }
        var cache = DeviceRowCache(limit: limit, isComplete: startsEmpty)
        var reads = 0, removed = 0
        for _ in 0..<80 {
            var changes: [Key: DeviceCategoryCounts] = [:]
            func add(_ notification: Notification, sign: Int) {
                let counts = notification.contribution
                let signed = sign > 0 ? counts : DeviceCategoryCounts(rich: .zero - counts.rich, plain: .zero - counts.plain)
                changes[notification.key] = (changes[notification.key] ?? DeviceCategoryCounts()) + signed
            }
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                let notification = DeviceMomentDeltasTests.randomNotification(&generator)
                notifications.append(notification)
                add(notification, sign: 1)
            }
            for _ in 0..<Int.random(in: 0...3, using: &generator) where !notifications.isEmpty {
                add(notifications.remove(at: Int.random(in: notifications.indices, using: &generator)), sign: -1)
            }
            let changed = changes.filter { !$0.value.isZero }
            let devices = Set(changed.keys.map { DeviceRowCache.DeviceKey(appID: $0.appID, deviceID: $0.deviceID) })
            let stored = table.filter { devices.contains(DeviceRowCache.DeviceKey(appID: $0.key.appID, deviceID: $0.key.deviceID)) }

            let cached = cache.storedRows(ofDevicesIn: changed.keys) { missing in
                reads += 1
                let asked = Set(missing)
                #expect(asked.count == missing.count)
                return table.filter { asked.contains(DeviceRowCache.DeviceKey(appID: $0.key.appID, deviceID: $0.key.deviceID)) }
            }
            #expect(cached == stored)

            // What the store writes, and what the batcher records once the batch committed.
            let deltas = DeviceMomentDeltas(changes: changed, stored: cached)
            for row in deltas.rows { table[row.key] = row.isZero ? nil : row.counts }
            removed += deltas.rows.filter(\.isZero).count
            cache.record(DeviceMomentStore.rowsAfter(deltas.rows, stored: cached))
        }
        #expect(removed > 0)
        // A complete cache never reads; one that forgets, or did not start with the table, does.
        #expect((reads == 0) == (limit > 100 && startsEmpty))
    }
}
