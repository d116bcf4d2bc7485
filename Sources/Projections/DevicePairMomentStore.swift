import EngageCore
import Postgres

/// The read model's sums over devices across two categories
/// (sql/migrations/013_device_pair_moments.sql, `engagement_device_pair_moments`): what the
/// adjusted answer needs to count a device once across categories. A device's change in one
/// category changes its products with every other category it has notifications in, so the
/// projector applies a batch's changes with all of the changed devices' categories: for each
/// pair of them, the device's old products are subtracted and its new ones added. It runs before
/// `DeviceMomentStore` writes the batch, while `engagement_devices` still holds the old counts.
enum DevicePairMomentStore {
    static let presentations = DeviceMomentStore.presentations

    /// Columns after the key, in table order: the per-device count column of the first category
    /// and of the second whose product each one sums.
    static let columns: [(name: String, first: String, second: String)] = {
        var columns: [(name: String, first: String, second: String)] = []
        for a in presentations.map(\.rawValue) {
            for b in presentations.map(\.rawValue) {
                columns.append((a + "_x_" + b + "_displayed", a + "_displayed", b + "_displayed"))
                for stage in FunnelStage.engagements.map(\.name) {
                    columns += [(a + "_x_" + b + "_" + stage, a + "_" + stage, b + "_" + stage),
                                (a + "_" + stage + "_x_" + b + "_displayed", a + "_" + stage, b + "_displayed"),
                                (a + "_displayed_x_" + b + "_" + stage, a + "_displayed", b + "_" + stage)]
                }
            }
        }
        return columns
    }()

    /// Applies the per-device changes of a batch (keys unique, none zero) to the pair sums.
    /// `apps`, `categories`, `devices` and `counts` are the changes as `DeviceMomentStore`
    /// sends them (one array per column of `engagement_devices`).
    static func apply(apps: [String], categories: [String], devices: [String], counts: [[Int64]],
                      tables: ReadModelTables, on connection: Connection) throws {
        let deviceColumns = DeviceMomentStore.deviceColumns
        let names = SQL.list(deviceColumns.map { "\(identifier: $0)" })
        // Every category of each changed device, with its counts before and after the batch.
        let oldAndNew = SQL.list(deviceColumns.flatMap { column -> [SQL] in
            ["coalesce(t.\(identifier: column), 0) AS \(identifier: "old_" + column)",
             "coalesce(t.\(identifier: column), 0) + coalesce(d.\(identifier: column), 0) AS \(identifier: "new_" + column)"]
        })
        let sums = SQL.list(columns.map { column -> SQL in
            "sum(a.\(identifier: "new_" + column.first) * b.\(identifier: "new_" + column.second) - a.\(identifier: "old_" + column.first) * b.\(identifier: "old_" + column.second))::int8"
        })
        let columnNames = SQL.list(columns.map { "\(identifier: $0.name)" })
        var statement: SQL = """
            WITH d (app_id, category, device_id, \(fragment: names)) AS (
                SELECT * FROM unnest(\(apps)::text[], \(categories)::text[], \(devices)::text[],
                                     \(fragment: SQL.list(counts.map { "\($0)::int8[]" })))
            ), t AS (
                SELECT * FROM \(unsafeSQL: tables.devices)
                WHERE (app_id, device_id) IN (SELECT app_id, device_id FROM d)
            ), c AS (
                SELECT app_id, category, device_id, d.device_id IS NOT NULL AS changed, \(fragment: oldAndNew)
                FROM t FULL JOIN d USING (app_id, category, device_id)
            )
            INSERT INTO \(unsafeSQL: tables.devicePairMoments) AS m (app_id, first_category, second_category, \(fragment: columnNames))
            SELECT a.app_id, a.category, b.category, \(fragment: sums)
            FROM c a JOIN c b ON a.app_id = b.app_id AND a.device_id = b.device_id AND a.category < b.category COLLATE "C"
            WHERE a.changed OR b.changed  -- a pair of two unchanged categories keeps its products
            GROUP BY a.app_id, a.category, b.category
            ON CONFLICT (app_id, first_category, second_category) DO UPDATE SET
            """
        statement.append(SQL.list(columns.map { "\(identifier: $0.name) = m.\(identifier: $0.name) + EXCLUDED.\(identifier: $0.name)" }))
        try connection.execute(statement)
        // No device left with displays in both categories: every product is 0 (x <= n).
        var empty: SQL = "true"
        for a in presentations {
            for b in presentations { empty.append(" AND t.\(identifier: a.rawValue + "_x_" + b.rawValue + "_displayed") = 0") }
        }
        try connection.execute("""
            DELETE FROM \(unsafeSQL: tables.devicePairMoments) t
            USING (SELECT DISTINCT * FROM unnest(\(apps)::text[], \(categories)::text[])) AS k(app_id, category)
            WHERE t.app_id = k.app_id AND (t.first_category = k.category OR t.second_category = k.category)
              AND \(fragment: empty)
            """)
    }

    /// The pairs' sums of one app (nil: every app), ordered by app and categories.
    static func read(appID: String?, on connection: Connection) throws -> [CategoryPairDeviceMoments] {
        let rows = try connection.query("""
            SELECT app_id, first_category, second_category, \(fragment: SQL.list(columns.map { "\(identifier: $0.name)" }))
            FROM engagement_device_pair_moments
            WHERE (\(appID)::text IS NULL OR app_id = \(appID))
            ORDER BY app_id, first_category COLLATE "C", second_category COLLATE "C"
            """)
        return try rows.rows.compactMap { row in
            var values: [String: Int] = [:]
            for (index, column) in columns.enumerated() { values[column.name] = try row.decode(3 + index, as: Int.self) }
            // As for a category's moments: sums no set of devices has (before the rebuild that
            // follows an upgrade) are left out rather than failing the report.
            do {
                return try moments(appID: try row.decode(0), first: try row.decode(1), second: try row.decode(2), values)
            } catch is StatisticsError {
                return nil
            }
        }
    }

    /// Stored sums as the statistics' types; throws `StatisticsError` for sums no set of devices has.
    static func moments(appID: String, first: String, second: String, _ values: [String: Int]) throws -> CategoryPairDeviceMoments {
        var result = CategoryPairDeviceMoments(appID: appID, first: first, second: second)
        func cross(_ a: ObservedPresentation, _ b: ObservedPresentation, _ stage: FunnelStage) throws -> DeviceCrossMoments {
            let a = a.rawValue, b = b.rawValue, s = stage.name
            return try DeviceCrossMoments(
                successesProduct: values[a + "_x_" + b + "_" + s]!, firstSuccessesSecondTrials: values[a + "_" + s + "_x_" + b + "_displayed"]!,
                firstTrialsSecondSuccesses: values[a + "_displayed_x_" + b + "_" + s]!, trialsProduct: values[a + "_x_" + b + "_displayed"]!)
        }
        for metric in EngagementMetric.reported {
            let stage = metric.numerator
            result.cross[metric] = CategoryPairDeviceMoments.Cross(
                richRich: try cross(.rich, .rich, stage), richPlain: try cross(.rich, .plain, stage),
                plainRich: try cross(.plain, .rich, stage), plainPlain: try cross(.plain, .plain, stage))
        }
        return result
    }
}
