import EngageCore

/// A batch's device changes folded in memory: from the changed devices' stored rows (every
/// category of each changed device, as `engagement_devices` holds them before the batch) and the
/// batch's per-device changes, the devices' rows after the batch and the changes of the sums over
/// devices, per category (`engagement_device_moments`) and per pair of categories
/// (`engagement_device_pair_moments`). Pure: the store reads the rows before and writes the
/// result after.
///
/// A device's terms before the change are subtracted and its terms after it added, so the sums
/// equal a fold from scratch whatever the order of events (the same arithmetic as a fold of the
/// rows in SQL, including rows no set of notifications has, such as those of a database upgraded
/// to the device moments before its rebuild).
struct DeviceMomentDeltas {
    typealias Key = DeviceMomentFold.Key

    /// A row of `engagement_devices`: its counts in `DeviceMomentStore.deviceColumns` order.
    typealias Row = [Int64]

    struct CategoryKey: Hashable {
        var appID: String
        var category: String
    }

    /// The first category's name sorts before the second's in byte order (`COLLATE "C"`).
    struct PairKey: Hashable {
        var appID: String
        var first: String
        var second: String
    }

    struct DeviceKey: Hashable {
        var appID: String
        var deviceID: String
    }

    /// A changed device's row after the batch (all 0: to remove), and whether one was stored.
    struct ChangedRow {
        var key: Key
        var counts: Row
        var wasStored: Bool
        var isZero: Bool { counts.allSatisfy { $0 == 0 } }
    }

    private(set) var rows: [ChangedRow] = []
    /// Changes of the per-category sums in `DeviceMomentStore.momentColumns` order: one entry per
    /// category with a changed device.
    private(set) var moments: [CategoryKey: Row] = [:]
    /// Per changed device with notifications in two categories or more, every category of it:
    /// its counts before and after the batch, and whether it changed. What `pairs(ofApps:)` reads.
    private var devicesInSeveralCategories: [(device: DeviceKey, categories: [DeviceCategory])] = []

    typealias DeviceCategory = (name: String, old: Row, new: Row, changed: Bool)

    /// `changes`: the batch's changes (keys unique, none zero); `stored`: every stored row of
    /// the changed devices, in any of their categories.
    init(changes: [Key: DeviceCategoryCounts], stored: [Key: Row]) {
        let width = DeviceMomentStore.deviceColumns.count
        var storedByDevice: [DeviceKey: [String: Row]] = [:]
        for (key, row) in stored {
            storedByDevice[DeviceKey(appID: key.appID, deviceID: key.deviceID), default: [:]][key.category] = row
        }
        var changedByDevice: [DeviceKey: [String: Row]] = [:]
        for (key, change) in changes {
            changedByDevice[DeviceKey(appID: key.appID, deviceID: key.deviceID), default: [:]][key.category] = Self.row(change)
        }
        rows.reserveCapacity(changes.count)
        let zero = Row(repeating: 0, count: width)
        for (device, changed) in changedByDevice {
            let storedRows = storedByDevice[device] ?? [:]
            var categories: [DeviceCategory] = []
            for (category, old) in storedRows where changed[category] == nil {
                categories.append((category, old, old, false))
            }
            for (category, change) in changed {
                let old = storedRows[category]
                var new = old ?? zero
                for index in 0..<width { new[index] += change[index] }
                categories.append((category, old ?? zero, new, true))
                let key = Key(appID: device.appID, category: category, deviceID: device.deviceID)
                rows.append(ChangedRow(key: key, counts: new, wasStored: old != nil))
                Self.add(Self.momentTerms, of: new, minus: old ?? zero,
                         to: &moments[CategoryKey(appID: device.appID, category: category), default: Self.zeroMoments])
            }
            if categories.count > 1 { devicesInSeveralCategories.append((device, categories)) }
        }
    }

    /// Changes of the sums across two categories in `DevicePairMomentStore.columns` order, for
    /// the changed devices of the apps `isPaired` accepts: one entry per pair with a changed
    /// device in one of the two categories and the other stored or changed. The work is the
    /// square of a device's categories, so the store asks only for apps whose pairs it keeps
    /// (`DevicePairMomentStore.maximumCategoriesPerApp`).
    func pairs(ofApps isPaired: (String) -> Bool) -> [PairKey: Row] {
        var pairs: [PairKey: Row] = [:]
        for (device, unsorted) in devicesInSeveralCategories where isPaired(device.appID) {
            let categories = unsorted.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            for (i, a) in categories.enumerated() {
                for b in categories[(i + 1)...] where a.changed || b.changed {
                    Self.addPairTerms(first: a, second: b,
                                      to: &pairs[PairKey(appID: device.appID, first: a.name, second: b.name), default: Self.zeroPairs])
                }
            }
        }
        return pairs
    }

    /// The pairs' changes of every app.
    var pairs: [PairKey: Row] { pairs(ofApps: { _ in true }) }

    /// A device's counts as a row.
    static func row(_ counts: DeviceCategoryCounts) -> Row {
        var row = Row()
        row.reserveCapacity(2 * rowStages.count)
        for stage in rowStages { row.append(Int64(counts.rich[stage])) }
        for stage in rowStages { row.append(Int64(counts.plain[stage])) }
        return row
    }

    /// The stages of a row, rich then plain (built once: `row` runs for every changed device).
    private static let rowStages = [FunnelStage.displayed] + FunnelStage.engagements

    /// How one column of the per-category sums is computed from a device's row.
    enum Term {
        case devices(Int)
        case sum(Int)
        case product(Int, Int)

        func value(_ row: Row) -> Int64 {
            switch self {
            case .devices(let n): row[n] > 0 ? 1 : 0
            case .sum(let x): row[x]
            case .product(let a, let b): row[a] * row[b]
            }
        }
    }

    static let momentTerms: [Term] = {
        let index = Dictionary(uniqueKeysWithValues: DeviceMomentStore.deviceColumns.enumerated().map { ($1, $0) })
        return DeviceMomentStore.momentColumns.map { column in
            switch column.term {
            case .devices(let n): .devices(index[n]!)
            case .sum(let x): .sum(index[x]!)
            case .product(let a, let b): .product(index[a]!, index[b]!)
            }
        }
    }()

    /// Per column of the pair sums, the column of the first category's row and of the second's.
    static let pairTerms: [(first: Int, second: Int)] = {
        let index = Dictionary(uniqueKeysWithValues: DeviceMomentStore.deviceColumns.enumerated().map { ($1, $0) })
        return DevicePairMomentStore.columns.map { (index[$0.first]!, index[$0.second]!) }
    }()

    private static let zeroMoments = Row(repeating: 0, count: momentTerms.count)
    private static let zeroPairs = Row(repeating: 0, count: pairTerms.count)

    private static func add(_ terms: [Term], of new: Row, minus old: Row, to sums: inout Row) {
        for (index, term) in terms.enumerated() { sums[index] += term.value(new) - term.value(old) }
    }

    private static func addPairTerms(first a: DeviceCategory, second b: DeviceCategory, to sums: inout Row) {
        for (index, term) in pairTerms.enumerated() {
            sums[index] += a.new[term.first] * b.new[term.second] - a.old[term.first] * b.old[term.second]
        }
    }
}
