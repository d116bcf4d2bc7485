import EngageCore
import Postgres

/// The read model's device moments (sql/migrations/011_device_moments.sql): per app, category
/// and device its rich and plain displayed notifications with the stages they reached
/// (`engagement_devices`), and per app and category the sums over devices that a cluster-robust
/// variance needs (`engagement_device_moments`). The projector applies a batch's per-device
/// changes in the batch's transaction: it reads the changed devices' rows once, folds the batch
/// in memory (`DeviceMomentDeltas`: each changed device's old terms, its counts before the
/// change, subtracted from the category's sums and its new terms added, so the sums equal a fold
/// from scratch whatever the order of events), and writes the rows and the sums' changes. The
/// sums across two categories (`DevicePairMomentStore`) come from the same fold.
enum DeviceMomentStore {
    /// The per-device count columns of one presentation: displayed (`n`), then one per
    /// engagement stage (`x` of each per-displayed metric).
    static func countColumns(_ presentation: ObservedPresentation) -> [String] {
        ([FunnelStage.displayed] + FunnelStage.engagements).map { presentation.rawValue + "_" + $0.name }
    }

    static let presentations: [ObservedPresentation] = [.rich, .plain]

    /// Columns of `engagement_devices` after its key, in table order.
    static let deviceColumns = presentations.flatMap(countColumns)

    /// A column of `engagement_device_moments`: the sum over devices of a device's count, of
    /// the product of two of its counts, or of 1 for each device with displayed notifications.
    enum Term {
        case devices(String)
        case sum(String)
        case product(String, String)
    }

    /// Columns of `engagement_device_moments` after its key, in table order, with their terms.
    static let momentColumns: [(name: String, term: Term)] = {
        var columns: [(name: String, term: Term)] = []
        for presentation in presentations {
            let p = presentation.rawValue, displayed = p + "_displayed"
            columns.append((p + "_devices", .devices(displayed)))
            columns.append((displayed, .sum(displayed)))
            columns.append((displayed + "_sq", .product(displayed, displayed)))
            for stage in FunnelStage.engagements {
                let x = p + "_" + stage.name
                columns += [(x, .sum(x)), (x + "_sq", .product(x, x)), (x + "_x_displayed", .product(x, displayed))]
            }
        }
        columns.append(("rich_x_plain_displayed", .product("rich_displayed", "plain_displayed")))
        for stage in FunnelStage.engagements {
            let s = stage.name
            columns += [("rich_x_plain_" + s, .product("rich_" + s, "plain_" + s)),
                        ("rich_" + s + "_x_plain_displayed", .product("rich_" + s, "plain_displayed")),
                        ("rich_displayed_x_plain_" + s, .product("rich_displayed", "plain_" + s))]
        }
        return columns
    }()

    /// Applies the per-device changes of a batch (keys unique) to the three tables: reads the
    /// changed devices' stored rows once, folds the batch in memory (`DeviceMomentDeltas`), then
    /// writes the devices' rows by binary COPY and the sums' changes with one upsert per table.
    /// Runs in the batch's transaction, after the checkpoint's row lock: nobody else writes
    /// these tables meanwhile, so the rows read stay the rows stored until the batch commits.
    /// `cache` (nil: none) gives the stored rows of the devices it knows; the others are read.
    /// Returns every row of each changed device after the batch, for the caller to record in its
    /// cache once the batch committed.
    @discardableResult
    static func apply(_ changes: [DeviceMomentFold.Key: DeviceCategoryCounts], tables: ReadModelTables,
                      cache: DeviceRowCache? = nil, on connection: Connection) throws -> [DeviceRowCache.DeviceKey: DeviceRowCache.DeviceRows] {
        let changed = changes.filter { !$0.value.isZero }
        if changed.isEmpty { return [:] }
        let stored = try cache?.storedRows(ofDevicesIn: changed.keys) { missing in
            try storedRows(ofDevices: missing, tables: tables, on: connection)
        } ?? storedRows(ofDevicesIn: changed.keys, tables: tables, on: connection)
        let deltas = DeviceMomentDeltas(changes: changed, stored: stored)
        let apps = Set(deltas.moments.keys.map(\.appID))
        let before = try DevicePairMomentStore.categoryCounts(ofApps: apps, tables: tables, on: connection)
        try write(deltas.rows, tables: tables, on: connection)
        try addMoments(deltas.moments, tables: tables, on: connection)
        let after = try DevicePairMomentStore.categoryCounts(ofApps: apps, tables: tables, on: connection)
        try DevicePairMomentStore.update(deltas, before: before, after: after, tables: tables, on: connection)
        return rowsAfter(deltas.rows, stored: stored)
    }

    /// Every row of each changed device after the batch: its stored rows with the changed ones
    /// replaced and those back at 0 removed (an empty set: the device has no rows left).
    static func rowsAfter(_ changed: [DeviceMomentDeltas.ChangedRow],
                          stored: [DeviceMomentFold.Key: DeviceMomentDeltas.Row]) -> [DeviceRowCache.DeviceKey: DeviceRowCache.DeviceRows] {
        var devices: [DeviceRowCache.DeviceKey: DeviceRowCache.DeviceRows] = [:]
        devices.reserveCapacity(changed.count)
        for row in changed {
            devices[DeviceRowCache.DeviceKey(appID: row.key.appID, deviceID: row.key.deviceID)] = [:]
        }
        for (key, row) in stored {
            let device = DeviceRowCache.DeviceKey(appID: key.appID, deviceID: key.deviceID)
            devices[device]?[key.category] = row
        }
        for row in changed {
            devices[DeviceRowCache.DeviceKey(appID: row.key.appID, deviceID: row.key.deviceID)]?[row.key.category] =
                row.isZero ? nil : row.counts
        }
        return devices
    }

    /// Every stored row, in any category, of the devices of `keys` (the pair sums need a changed
    /// device's unchanged categories too); found by the index `engagement_devices_by_device`, one
    /// probe per device. (`OFFSET 0` keeps the lookup a probe per key: as a plain join the planner
    /// hashes a seq scan of the whole table once it is a few times the batch, measured twice as
    /// slow at 50,000 rows, and slower the more devices the table holds.)
    static func storedRows(ofDevicesIn keys: some Collection<DeviceMomentFold.Key>, tables: ReadModelTables,
                           on connection: Connection) throws -> [DeviceMomentFold.Key: DeviceMomentDeltas.Row] {
        var seen = Set<DeviceMomentDeltas.DeviceKey>(minimumCapacity: keys.count)
        let devices = keys.map { DeviceMomentDeltas.DeviceKey(appID: $0.appID, deviceID: $0.deviceID) }.filter { seen.insert($0).inserted }
        return try storedRows(ofDevices: devices, tables: tables, on: connection)
    }

    /// Every stored row, in any category, of `devices` (unique).
    static func storedRows(ofDevices keys: [DeviceMomentDeltas.DeviceKey], tables: ReadModelTables,
                           on connection: Connection) throws -> [DeviceMomentFold.Key: DeviceMomentDeltas.Row] {
        let apps = keys.map(\.appID), devices = keys.map(\.deviceID)
        let result = try connection.query("""
            SELECT t.app_id, t.category, t.device_id, \(fragment: SQL.list(deviceColumns.map { "t.\(identifier: $0)" }))
            FROM unnest(\(apps)::text[], \(devices)::text[]) AS k(app_id, device_id)
            CROSS JOIN LATERAL (
                SELECT * FROM \(unsafeSQL: tables.devices) d WHERE d.app_id = k.app_id AND d.device_id = k.device_id OFFSET 0
            ) t
            """)
        var rows: [DeviceMomentFold.Key: DeviceMomentDeltas.Row] = [:]
        rows.reserveCapacity(result.rowCount)
        for row in result.rows {
            let key = DeviceMomentFold.Key(appID: try row.decode(0), category: try row.decode(1), deviceID: try row.decode(2))
            rows[key] = try (0..<deviceColumns.count).map { try row.cell(3 + $0).int64() }
        }
        return rows
    }

    /// Writes the changed devices' rows: new ones by binary COPY straight into the table, stored
    /// ones through a staging table and one upsert, and removes the rows every notification has
    /// left, so the model does not depend on the order in which events arrived (a rebuild equals
    /// it row for row).
    static func write(_ rows: [DeviceMomentDeltas.ChangedRow], tables: ReadModelTables, on connection: Connection) throws {
        var inserted = BinaryCopyEncoder(reservingCapacity: rows.count * 160)
        var updated = BinaryCopyEncoder(reservingCapacity: 0)
        var removedApps: [String] = [], removedCategories: [String] = [], removedDevices: [String] = []
        for row in rows {
            if row.isZero {
                // Only a stored row can return to 0: a new one is the change itself, never 0.
                removedApps.append(row.key.appID)
                removedCategories.append(row.key.category)
                removedDevices.append(row.key.deviceID)
                continue
            }
            func append(_ copy: inout BinaryCopyEncoder) {
                copy.beginRow(columnCount: 3 + deviceColumns.count)
                copy.appendText(row.key.appID)
                copy.appendText(row.key.category)
                copy.appendText(row.key.deviceID)
                for value in row.counts { copy.appendInt64(value) }
            }
            if row.wasStored { append(&updated) } else { append(&inserted) }
        }
        let columns = SQL.list(deviceColumns.map { "\(identifier: $0)" })
        if inserted.rowCount > 0 {
            try connection.copyIn("""
                COPY \(unsafeSQL: tables.devices) (app_id, category, device_id, \(fragment: columns)) FROM STDIN (FORMAT binary)
                """, data: inserted.finish())
        }
        if updated.rowCount > 0 {
            // Dropped when the transaction commits, never left to the session's end (EventStore's
            // `createStaging` says why).
            try connection.execute("""
                CREATE TEMP TABLE IF NOT EXISTS staged_devices (app_id text, category text, device_id text,
                    \(fragment: SQL.list(deviceColumns.map { "\(identifier: $0) bigint" }))) ON COMMIT DROP
                """)
            try connection.copyIn("COPY staged_devices FROM STDIN (FORMAT binary)", data: updated.finish())
            try connection.execute("""
                INSERT INTO \(unsafeSQL: tables.devices) AS t (app_id, category, device_id, \(fragment: columns))
                SELECT app_id, category, device_id, \(fragment: columns) FROM staged_devices
                ON CONFLICT (app_id, category, device_id) DO UPDATE SET
                    \(fragment: SQL.list(deviceColumns.map { "\(identifier: $0) = EXCLUDED.\(identifier: $0)" }))
                """)
            // Several batches can share one transaction (a rebuild's last catch-up).
            try connection.execute("TRUNCATE staged_devices")
        }
        if !removedApps.isEmpty {
            try connection.execute("""
                DELETE FROM \(unsafeSQL: tables.devices) t
                USING unnest(\(removedApps)::text[], \(removedCategories)::text[], \(removedDevices)::text[]) AS k(app_id, category, device_id)
                WHERE t.app_id = k.app_id AND t.category = k.category AND t.device_id = k.device_id
                """)
        }
    }

    /// Adds the changes of the per-category sums; a category left with no device is removed.
    static func addMoments(_ deltas: [DeviceMomentDeltas.CategoryKey: DeviceMomentDeltas.Row], tables: ReadModelTables,
                           on connection: Connection) throws {
        if deltas.isEmpty { return }
        var apps: [String] = [], categories: [String] = []
        var sums: [[Int64]] = Array(repeating: [], count: momentColumns.count)
        for (key, row) in deltas {
            apps.append(key.appID)
            categories.append(key.category)
            for (index, value) in row.enumerated() { sums[index].append(value) }
        }
        let names = momentColumns.map(\.name)
        var statement: SQL = """
            INSERT INTO \(unsafeSQL: tables.deviceMoments) AS m (app_id, category, \(fragment: SQL.list(names.map { "\(identifier: $0)" })))
            SELECT * FROM unnest(\(apps)::text[], \(categories)::text[], \(fragment: SQL.list(sums.map { "\($0)::int8[]" })))
            ON CONFLICT (app_id, category) DO UPDATE SET
            """
        statement.append(SQL.list(names.map { "\(identifier: $0) = m.\(identifier: $0) + EXCLUDED.\(identifier: $0)" }))
        statement.append(" RETURNING m.app_id, m.category, m.rich_devices = 0 AND m.plain_devices = 0")
        let empty = try connection.query(statement).rows.filter { try $0.decode(2, as: Bool.self) }
        if empty.isEmpty { return }
        let emptyApps: [String] = try empty.map { try $0.decode(0) }, emptyCategories: [String] = try empty.map { try $0.decode(1) }
        try connection.execute("""
            DELETE FROM \(unsafeSQL: tables.deviceMoments) t
            USING unnest(\(emptyApps)::text[], \(emptyCategories)::text[]) AS k(app_id, category)
            WHERE t.app_id = k.app_id AND t.category = k.category
            """)
    }

    /// The moments of the categories within the filters (nil: any), one row per app and category.
    static func read(appID: String?, category: String?, on connection: Connection) throws -> [CategoryDeviceMoments] {
        let names = momentColumns.map(\.name)
        let rows = try connection.query("""
            SELECT app_id, category, \(fragment: SQL.list(names.map { "\(identifier: $0)" }))
            FROM engagement_device_moments
            WHERE (\(appID)::text IS NULL OR app_id = \(appID)) AND (\(category)::text IS NULL OR category = \(category))
            ORDER BY app_id, category
            """)
        return try rows.rows.compactMap { row in
            var values: [String: Int] = [:]
            for (index, name) in names.enumerated() { values[name] = try row.decode(2 + index, as: Int.self) }
            // Sums no set of devices has (a database upgraded to the device moments with events
            // already folded, before its rebuild) are left out: that category's figures then take
            // the notification as the unit, and say so, instead of the report failing.
            do {
                return try moments(appID: try row.decode(0), category: try row.decode(1), values)
            } catch is StatisticsError {
                return nil
            }
        }
    }

    /// Stored sums as the statistics' types; throws `StatisticsError` for sums no set of devices has.
    static func moments(appID: String, category: String, _ values: [String: Int]) throws -> CategoryDeviceMoments {
        var result = CategoryDeviceMoments(appID: appID, category: category)
        func side(_ presentation: ObservedPresentation, _ stage: FunnelStage) throws -> DeviceMoments {
            let p = presentation.rawValue, x = p + "_" + stage.name
            return try DeviceMoments(devices: values[p + "_devices"]!, successes: values[x]!, trials: values[p + "_displayed"]!,
                                     successesSquared: values[x + "_sq"]!, trialsSquared: values[p + "_displayed_sq"]!,
                                     successesTimesTrials: values[x + "_x_displayed"]!)
        }
        for metric in EngagementMetric.reported {
            let stage = metric.numerator, s = stage.name
            result.rich[metric] = try side(.rich, stage)
            result.plain[metric] = try side(.plain, stage)
            result.shared[metric] = try DeviceCrossMoments(
                successesProduct: values["rich_x_plain_" + s]!, firstSuccessesSecondTrials: values["rich_" + s + "_x_plain_displayed"]!,
                firstTrialsSecondSuccesses: values["rich_displayed_x_plain_" + s]!, trialsProduct: values["rich_x_plain_displayed"]!)
        }
        return result
    }
}
