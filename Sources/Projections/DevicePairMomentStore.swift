import EngageCore
import Postgres

/// The read model's sums over devices across two categories
/// (sql/migrations/013_device_pair_moments.sql, `engagement_device_pair_moments`): what the
/// adjusted answer needs to count a device once across categories. A device's change in one
/// category changes its products with every other category it has notifications in, so the
/// batch's fold (`DeviceMomentDeltas`) takes all of the changed devices' categories: for each
/// pair of them with a change, the device's old products are subtracted and its new ones added;
/// this store adds those changes.
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

    /// The most categories an app may have in `engagement_device_moments` for its pairs to be
    /// kept. The pairs of an app number the square of its categories, and so does the fold's work
    /// for a device in many of them: an app that names a category per message (20,000 in one
    /// batch for one device: 200 million pairs) would stop the projector. The report needs the
    /// pairs only up to this many categories (beyond, notifications are the unit), and takes an
    /// app with more as having no device moments (`withPairsKept`).
    static let maximumCategoriesPerApp = StratifiedMetricSummary.maximumClusteredCategories

    /// Per app of `apps`, its categories in the device moments, counted up to one more than
    /// `maximumCategoriesPerApp`.
    static func categoryCounts(ofApps apps: Set<String>, tables: ReadModelTables, on connection: Connection) throws -> [String: Int] {
        if apps.isEmpty { return [:] }
        let limit = maximumCategoriesPerApp + 1
        let rows = try connection.query("""
            SELECT k.app_id, (SELECT count(*) FROM (SELECT FROM \(unsafeSQL: tables.deviceMoments) m
                                                     WHERE m.app_id = k.app_id LIMIT \(limit)) c)::int8
            FROM unnest(\(Array(apps))::text[]) AS k(app_id)
            """)
        var counts: [String: Int] = [:]
        for row in rows.rows { counts[try row.decode(0)] = try row.decode(1, as: Int.self) }
        return counts
    }

    /// The apps (one, or every app) with more categories in the device moments than the limit,
    /// counted as the projector counts them (every stored row).
    static func appsBeyondLimit(appID: String?, on connection: Connection) throws -> Set<String> {
        Set(try connection.query("""
            SELECT app_id FROM engagement_device_moments WHERE (\(appID)::text IS NULL OR app_id = \(appID))
            GROUP BY app_id HAVING count(*) > \(maximumCategoriesPerApp)
            """).rows.map { try $0.decode(0, as: String.self) })
    }

    /// The device moments of the apps whose pairs are kept: an app beyond the limit reads as one
    /// without device moments (notifications the unit), since its pairs are not summed.
    static func withPairsKept(_ moments: [CategoryDeviceMoments], appsBeyondLimit: Set<String>) -> [CategoryDeviceMoments] {
        moments.filter { !appsBeyondLimit.contains($0.appID) }
    }

    /// The columns of a pair's products of displays (rich and plain in each category): a pair
    /// with all of them 0 has no device displayed in both categories, and is not kept.
    static let displayedProducts = presentations.flatMap { a in presentations.map { b in a.rawValue + "_x_" + b.rawValue + "_displayed" } }

    /// Keeps the pairs of the batch's apps: adds the changes of those within the limit before and
    /// after the batch, removes every pair of an app the batch took beyond it, and sums again from
    /// the devices' rows the pairs of an app the batch brought back within it (a late event can
    /// move a notification to another category). Either way the pairs are those a rebuild writes.
    static func update(_ deltas: DeviceMomentDeltas, before: [String: Int], after: [String: Int],
                       tables: ReadModelTables, on connection: Connection) throws {
        func isKept(_ counts: [String: Int], _ app: String) -> Bool { counts[app, default: 0] <= maximumCategoriesPerApp }
        try add(deltas.pairs(ofApps: { isKept(before, $0) && isKept(after, $0) }), tables: tables, on: connection)
        let apps = Set(before.keys).union(after.keys).sorted()
        let dropped = apps.filter { isKept(before, $0) && !isKept(after, $0) }
        if !dropped.isEmpty {
            try connection.execute("DELETE FROM \(unsafeSQL: tables.devicePairMoments) WHERE app_id = ANY(\(dropped)::text[])")
        }
        for app in apps where !isKept(before, app) && isKept(after, app) {
            try sumFromDevices(app: app, tables: tables, on: connection)
        }
    }

    /// Writes an app's pairs (none stored) from its devices' rows: what the batches' changes add
    /// up to, pairs with no device displayed in both categories left out as `add` removes them.
    static func sumFromDevices(app: String, tables: ReadModelTables, on connection: Connection) throws {
        let displayedInBoth = SQL.list(columns.filter { displayedProducts.contains($0.name) }.map {
            "sum(a.\(identifier: $0.first) * b.\(identifier: $0.second)) <> 0"
        }, separator: " OR ")
        // Pairs kept before an upgrade brought this rule are stale once the app went beyond it.
        try connection.execute("DELETE FROM \(unsafeSQL: tables.devicePairMoments) WHERE app_id = \(app)")
        try connection.execute("""
            INSERT INTO \(unsafeSQL: tables.devicePairMoments) (app_id, first_category, second_category,
                \(fragment: SQL.list(columns.map { "\(identifier: $0.name)" })))
            SELECT a.app_id, a.category, b.category,
                \(fragment: SQL.list(columns.map { "sum(a.\(identifier: $0.first) * b.\(identifier: $0.second))::int8" }))
            FROM \(unsafeSQL: tables.devices) a
            JOIN \(unsafeSQL: tables.devices) b
              ON b.app_id = a.app_id AND b.device_id = a.device_id AND a.category COLLATE "C" < b.category COLLATE "C"
            WHERE a.app_id = \(app)
            GROUP BY a.app_id, a.category, b.category
            HAVING \(fragment: displayedInBoth)
            """)
    }

    /// Adds the changes of the pairs' sums (`DeviceMomentDeltas.pairs`); a pair left with no
    /// device that has displays in both categories (every product 0, as x <= n) is removed.
    static func add(_ deltas: [DeviceMomentDeltas.PairKey: DeviceMomentDeltas.Row], tables: ReadModelTables,
                    on connection: Connection) throws {
        if deltas.isEmpty { return }
        var apps: [String] = [], firsts: [String] = [], seconds: [String] = []
        var sums: [[Int64]] = Array(repeating: [], count: columns.count)
        for (key, row) in deltas {
            apps.append(key.appID)
            firsts.append(key.first)
            seconds.append(key.second)
            for (index, value) in row.enumerated() { sums[index].append(value) }
        }
        let columnNames = SQL.list(columns.map { "\(identifier: $0.name)" })
        var statement: SQL = """
            INSERT INTO \(unsafeSQL: tables.devicePairMoments) AS m (app_id, first_category, second_category, \(fragment: columnNames))
            SELECT * FROM unnest(\(apps)::text[], \(firsts)::text[], \(seconds)::text[],
                                 \(fragment: SQL.list(sums.map { "\($0)::int8[]" })))
            ON CONFLICT (app_id, first_category, second_category) DO UPDATE SET
            """
        statement.append(SQL.list(columns.map { "\(identifier: $0.name) = m.\(identifier: $0.name) + EXCLUDED.\(identifier: $0.name)" }))
        let empty = SQL.list(displayedProducts.map { "m.\(identifier: $0) = 0" }, separator: " AND ")
        statement.append(" RETURNING m.app_id, m.first_category, m.second_category, ")
        statement.append(empty)
        let emptied = try connection.query(statement).rows.filter { try $0.decode(3, as: Bool.self) }
        if emptied.isEmpty { return }
        let emptyApps: [String] = try emptied.map { try $0.decode(0) }
        let emptyFirsts: [String] = try emptied.map { try $0.decode(1) }, emptySeconds: [String] = try emptied.map { try $0.decode(2) }
        try connection.execute("""
            DELETE FROM \(unsafeSQL: tables.devicePairMoments) t
            USING unnest(\(emptyApps)::text[], \(emptyFirsts)::text[], \(emptySeconds)::text[]) AS k(app_id, first_category, second_category)
            WHERE t.app_id = k.app_id AND t.first_category = k.first_category AND t.second_category = k.second_category
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
