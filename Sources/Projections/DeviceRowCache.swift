import EngageCore
import Postgres

/// The `engagement_devices` rows of the devices the batcher folded lately, every category of
/// each, as its committed batches left them, so that a batch reads from the table only the rows
/// of devices it has not seen (none at all in a catch-up from an empty read model).
///
/// Safe for the same reason as the batcher's state cache: the batcher updates it only after its
/// batch committed, and each batch proves under the checkpoint's row lock that nobody else wrote
/// the read model in between (a fenced batcher forgets it).
struct DeviceRowCache: Sendable {
    typealias DeviceKey = DeviceMomentDeltas.DeviceKey
    /// A device's rows by category (empty: the device has none).
    typealias DeviceRows = [String: DeviceMomentDeltas.Row]

    let limit: Int
    private var devices: [DeviceKey: DeviceRows] = [:]
    /// True when every device with a stored row is in `devices` (the table was empty when the
    /// cache started and nothing was evicted): then a device missing here has no rows.
    private(set) var isComplete: Bool

    init(limit: Int, isComplete: Bool) {
        self.limit = limit
        self.isComplete = isComplete
    }

    var count: Int { devices.count }

    /// Every stored row of the devices of `keys`, from the cache where it knows them and from
    /// `read` (given the devices it does not know) for the others.
    func storedRows(ofDevicesIn keys: some Collection<DeviceMomentFold.Key>,
                    read: (_ missing: [DeviceKey]) throws -> [DeviceMomentFold.Key: DeviceMomentDeltas.Row])
        rethrows -> [DeviceMomentFold.Key: DeviceMomentDeltas.Row] {
        var rows: [DeviceMomentFold.Key: DeviceMomentDeltas.Row] = [:]
        var seen = Set<DeviceKey>(minimumCapacity: keys.count)
        var missing: [DeviceKey] = []
        for key in keys {
            let device = DeviceKey(appID: key.appID, deviceID: key.deviceID)
            guard seen.insert(device).inserted else { continue }
            if let cached = devices[device] {
                for (category, row) in cached {
                    rows[DeviceMomentFold.Key(appID: device.appID, category: category, deviceID: device.deviceID)] = row
                }
            } else if !isComplete {
                missing.append(device)
            }
        }
        if !missing.isEmpty { rows.merge(try read(missing)) { cached, _ in cached } }
        return rows
    }

    /// Records the rows of the devices a committed batch changed (each device's every row after
    /// the batch); forgets everything, and from then on reads what it does not know, when the
    /// cache would outgrow its limit.
    mutating func record(_ changed: [DeviceKey: DeviceRows]) {
        if devices.count + changed.count > limit {
            devices.removeAll(keepingCapacity: true)
            isComplete = false
        }
        devices.merge(changed) { _, new in new }
    }
}
