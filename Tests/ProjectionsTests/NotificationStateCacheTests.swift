@testable import EngageCore
@testable import Projections
import SeededRandom
import Testing

/// The states the batcher keeps between batches: batch after batch, what the cache gives for a
/// batch's notifications must be exactly what `notification_states` holds for them, whether it
/// knows every stored notification (from an empty table) or must read those it forgot or never
/// saw; and a notification it never wrote must cost no lookup while its filter knows them all.
@Suite("Notification states cached between batches")
struct NotificationStateCacheTests {
    static func key(_ n: Int) -> NotificationKey { NotificationKey(appID: "app-1", notificationID: "apns-\(n)") }

    static func state(_ serial: UInt64) -> NotificationState {
        var state = NotificationState()
        state.eventIDs = [EventID(high: 7, low: serial)]
        return state
    }

    struct Outcome {
        var reads = 0
        var keysRead = 0
        var knowsEveryStoredNotification = false
    }

    /// 60 batches of `new` new notifications and `old` earlier ones each, against a table the
    /// test keeps; the table of a cache that does not start empty holds 20 states it never saw,
    /// which each batch scans `scanChunk` at a time while the cache asks for them, as the batcher
    /// does, in key order.
    static func run(limit: Int, startsEmpty: Bool, estimate: Int = 20, scanChunk: Int = 7, filter: NotificationKeyFilter,
                    new: Int, old: Int, seed: UInt64) -> Outcome {
        var generator = SeededGenerator(projectionSeed: seed)
        var table: [NotificationKey: NotificationState] = [:]
        var next = 0, serial: UInt64 = 0
        if !startsEmpty {
            for _ in 0..<20 {
                serial += 1
                table[key(next)] = state(serial)
                next += 1
            }
        }
        var cache = NotificationStateCache(limit: limit, table: startsEmpty ? .empty : .stored(estimatedStates: estimate), filter: filter)
        func inKeyOrder(_ a: NotificationKey, _ b: NotificationKey) -> Bool { (a.appID, a.notificationID) < (b.appID, b.notificationID) }
        var outcome = Outcome()
        for _ in 0..<60 {
            var batch = Set((next..<next + new).map(key))
            next += new
            for _ in 0..<old where next > 0 { batch.insert(key(Int.random(in: 0..<next, using: &generator))) }
            if let scan = cache.pendingScan {
                let keys = table.keys.filter { key in scan.after.map { inKeyOrder($0, key) } ?? true }.sorted(by: inKeyOrder)
                cache.recordScanned(Array(keys.prefix(scanChunk)), isLast: keys.count <= scanChunk)
            }
            let cached = cache.storedStates(of: batch) { missing in
                outcome.reads += 1
                outcome.keysRead += missing.count
                #expect(Set(missing).count == missing.count)
                return table.filter { missing.contains($0.key) }
            }
            #expect(cached == table.filter { batch.contains($0.key) })
            // The batch writes a new state for each of its notifications and commits.
            var written: [NotificationKey: NotificationState] = [:]
            for key in batch {
                serial += 1
                written[key] = state(serial)
            }
            table.merge(written) { _, new in new }
            cache.record(written)
        }
        outcome.knowsEveryStoredNotification = cache.knowsEveryStoredNotification
        return outcome
    }

    /// A table with states the cache never saw is scanned a chunk per batch while new ones are
    /// written, the scan walking the new keys too (a batch writes fewer than a chunk, so it ends):
    /// until it ends batches look up their new notifications, then new ones cost nothing.
    @Test func aTableWithStatesIsScannedAndThenNewNotificationsCostNoLookup() {
        let outcome = Self.run(limit: 50, startsEmpty: false, scanChunk: 7, filter: NotificationKeyFilter(), new: 5, old: 0, seed: 6)
        #expect(outcome.knowsEveryStoredNotification)
        #expect(outcome.reads > 0, "the first batches look their notifications up")
        #expect(outcome.reads < 30, "\(outcome.reads) of 60 batches looked up")
    }

    @Test func aTableLargerThanHalfTheFilterIsNotScanned() {
        let filter = NotificationKeyFilter(firstLayerCapacity: 100, maximumLayers: 1)
        let cache = NotificationStateCache(limit: 50, table: .stored(estimatedStates: 51), filter: filter)
        #expect(cache.pendingScan == nil)
        #expect(!cache.knowsEveryStoredNotification)
        let small = NotificationStateCache(limit: 50, table: .stored(estimatedStates: 50), filter: filter)
        #expect(small.pendingScan != nil)
        #expect(!small.knowsEveryStoredNotification)
    }

    @Test func newNotificationsCostNoLookupAfterTheCacheForgotStates() {
        let outcome = Self.run(limit: 50, startsEmpty: true, filter: NotificationKeyFilter(), new: 40, old: 0, seed: 1)
        #expect(outcome.reads == 0)
        #expect(outcome.knowsEveryStoredNotification)
    }

    @Test(arguments: [(seed: 2, limit: 50, startsEmpty: true, filterCapacity: 1 << 20),
                      (seed: 3, limit: 100_000, startsEmpty: true, filterCapacity: 1 << 20),
                      (seed: 4, limit: 50, startsEmpty: false, filterCapacity: 1 << 20),
                      (seed: 5, limit: 50, startsEmpty: true, filterCapacity: 300)]
          as [(seed: UInt64, limit: Int, startsEmpty: Bool, filterCapacity: Int)])
    func theCachedStatesEqualTheStoredStatesBatchAfterBatch(seed: UInt64, limit: Int, startsEmpty: Bool, filterCapacity: Int) {
        let outcome = Self.run(limit: limit, startsEmpty: startsEmpty, scanChunk: 50,
                               filter: NotificationKeyFilter(firstLayerCapacity: filterCapacity, maximumLayers: 1),
                               new: 30, old: 10, seed: seed)
        // A filter that filled up (2,400 notifications in a filter of 300) stops answering.
        // A table with states (20) is scanned whole by the first batch.
        #expect(outcome.knowsEveryStoredNotification == (filterCapacity > 2_400))
        if limit >= 2_400 && startsEmpty {
            #expect(outcome.reads == 0, "the cache holds every state")
        } else {
            // Earlier notifications the cache forgot are read; new ones only when nothing rules them out.
            #expect(outcome.reads > 0)
            let newKeysRead = outcome.keysRead - 60 * 10
            #expect(outcome.knowsEveryStoredNotification ? newKeysRead <= 0 : newKeysRead > 0)
        }
    }
}
