import EngageCore
import Postgres

/// The read model's device moments (sql/migrations/011_device_moments.sql): per app, category
/// and device its rich and plain displayed notifications with the stages they reached
/// (`engagement_devices`), and per app and category the sums over devices that a cluster-robust
/// variance needs (`engagement_device_moments`). The projector applies a batch's per-device
/// changes in one statement, in the batch's transaction: each changed device's row is updated,
/// and its old terms (its counts before the change) are subtracted from the category's sums and
/// its new terms added, so the sums equal a fold from scratch whatever the order of events. The
/// sums across two categories (`DevicePairMomentStore`) are updated first, in the same transaction.
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

    /// Applies the per-device changes of a batch (keys unique) to both tables.
    static func apply(_ changes: [DeviceMomentFold.Key: DeviceCategoryCounts], tables: ReadModelTables,
                      on connection: Connection) throws {
        let changed = changes.filter { !$0.value.isZero }
        if changed.isEmpty { return }
        var apps: [String] = [], categories: [String] = [], devices: [String] = []
        var counts: [[Int64]] = Array(repeating: [], count: deviceColumns.count)
        let stages = [FunnelStage.displayed] + FunnelStage.engagements
        for (key, change) in changed {
            apps.append(key.appID)
            categories.append(key.category)
            devices.append(key.deviceID)
            for (index, stage) in stages.enumerated() {
                counts[index].append(Int64(change.rich[stage]))
                counts[stages.count + index].append(Int64(change.plain[stage]))
            }
        }
        try DevicePairMomentStore.apply(apps: apps, categories: categories, devices: devices, counts: counts,
                                        tables: tables, on: connection)
        let columns = SQL.list(deviceColumns.map { "\(identifier: $0)" })
        let sums = SQL.list(momentColumns.map { column -> SQL in
            switch column.term {
            case .devices(let n):
                "sum((\(identifier: "new_" + n) > 0)::int4 - (\(identifier: "old_" + n) > 0)::int4)::int8"
            case .sum(let x):
                "sum(\(identifier: "new_" + x) - \(identifier: "old_" + x))::int8"
            case .product(let a, let b):
                "sum(\(identifier: "new_" + a) * \(identifier: "new_" + b) - \(identifier: "old_" + a) * \(identifier: "old_" + b))::int8"
            }
        })
        let newAndOld = SQL.list(deviceColumns.flatMap { column -> [SQL] in
            ["u.\(identifier: column) AS \(identifier: "new_" + column)",
             "u.\(identifier: column) - d.\(identifier: column) AS \(identifier: "old_" + column)"]
        })
        let momentNames = momentColumns.map(\.name)
        var statement: SQL = """
            WITH d (app_id, category, device_id, \(fragment: columns)) AS (
                SELECT * FROM unnest(\(apps)::text[], \(categories)::text[], \(devices)::text[],
                                     \(fragment: SQL.list(counts.map { "\($0)::int8[]" })))
            ), u AS (
                INSERT INTO \(unsafeSQL: tables.devices) AS t (app_id, category, device_id, \(fragment: columns))
                SELECT * FROM d
                ON CONFLICT (app_id, category, device_id) DO UPDATE SET
                    \(fragment: SQL.list(deviceColumns.map { "\(identifier: $0) = t.\(identifier: $0) + EXCLUDED.\(identifier: $0)" }))
                RETURNING t.*
            ), terms AS (
                SELECT u.app_id, u.category, \(fragment: newAndOld)
                FROM u JOIN d ON u.app_id = d.app_id AND u.category = d.category AND u.device_id = d.device_id
            )
            INSERT INTO \(unsafeSQL: tables.deviceMoments) AS m (app_id, category, \(fragment: SQL.list(momentNames.map { "\(identifier: $0)" })))
            SELECT app_id, category, \(fragment: sums) FROM terms GROUP BY app_id, category
            ON CONFLICT (app_id, category) DO UPDATE SET
            """
        statement.append(SQL.list(momentNames.map { "\(identifier: $0) = m.\(identifier: $0) + EXCLUDED.\(identifier: $0)" }))
        try connection.execute(statement)
        // Rows every notification has left are removed, so the model does not depend on the order
        // in which events arrived (a rebuild equals it row for row).
        try connection.execute("""
            DELETE FROM \(unsafeSQL: tables.devices) t
            USING unnest(\(apps)::text[], \(categories)::text[], \(devices)::text[]) AS k(app_id, category, device_id)
            WHERE t.app_id = k.app_id AND t.category = k.category AND t.device_id = k.device_id
              AND (\(fragment: SQL.list(deviceColumns.map { "t.\(identifier: $0)" }))) = (\(fragment: SQL.list(deviceColumns.map { _ in "0" })))
            """)
        try connection.execute("""
            DELETE FROM \(unsafeSQL: tables.deviceMoments) t
            USING unnest(\(apps)::text[], \(categories)::text[]) AS k(app_id, category)
            WHERE t.app_id = k.app_id AND t.category = k.category AND t.rich_devices = 0 AND t.plain_devices = 0
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
