import EngageCore
import Postgres

/// Reads the engagement read model for a report: the aggregate rows within the filters, summed
/// by PostgreSQL where the report does not need them apart. Its cost depends on the number of
/// buckets (categories × presentations × kinds × days), not on the size of the log.
public struct ReportQuery: Sendable {
    public var appID: String?
    public var category: String?
    public var from: UTCDay?
    public var through: UTCDay?
    public var grouping: ReportGrouping

    public init(appID: String? = nil, category: String? = nil, from: UTCDay? = nil, through: UTCDay? = nil,
                grouping: ReportGrouping = .category) {
        self.appID = appID
        self.category = category
        self.from = from
        self.through = through
        self.grouping = grouping
    }

    public func run(on pool: ConnectionPool, now: Timestamp) async throws -> EngagementReport {
        let query = self
        return try await pool.withConnection { connection in try query.run(on: connection, now: now) }
    }

    /// Reads the rows and the projector's checkpoint in one snapshot, so the report's
    /// "current as of" is exactly what its numbers include.
    public func run(on connection: Connection, now: Timestamp) throws -> EngagementReport {
        try connection.transaction(isolation: .repeatableRead) { connection in
            // Before any statement fixes the snapshot: a rebuild's swap (drop the live tables,
            // rename the copies, fold the tail, move the checkpoint, in one transaction) is waited
            // for here. Otherwise a report whose snapshot came before the swap committed read the
            // renamed copies without the tail the swap folded, and the old checkpoint beside them.
            try connection.execute(Self.lockReadTables)
            var report = try rows(on: connection, now: now)
            report.currentAsOf = try ProjectorLag.read(on: connection).freshness
            return report
        }
    }

    /// The tables a report reads, locked as they are read (ACCESS SHARE, which a standby takes too).
    static let lockReadTables: SQL = {
        let tables = ReadModelTables.live
        let names = [tables.engagement, tables.actions, tables.telemetry, tables.deviceMoments, tables.devicePairMoments]
        return "LOCK TABLE \(fragment: SQL.list(names.map { "\(identifier: $0)" })) IN ACCESS SHARE MODE"
    }()

    private func rows(on connection: Connection, now: Timestamp) throws -> EngagementReport {
        let filter = filterSQL()
        // Days are kept apart only when the report groups by day. Otherwise a row sums its days
        // and carries the first of them: a day the filter admitted, so that the report's own
        // day filter (`ReportFilters.admits`) keeps the row (a fixed placeholder day fell outside
        // every `since`/`until` range and emptied the report).
        let byDay = grouping == .day
        let dayColumn: SQL = byDay ? "day" : "min(day)"
        let groupBy: SQL = byDay ? " GROUP BY 1, 2, 3, 4, 5" : " GROUP BY 1, 2, 3, 4"
        let stages = FunnelStage.keptPerBucket
        var engagementSQL: SQL = """
            SELECT app_id, category, presentation, attachment_kind, \(fragment: dayColumn),
                   \(fragment: SQL.list(stages.map { "sum(\(identifier: $0.name))::int8" }))
            FROM engagement_daily WHERE
            """
        engagementSQL.append(filter)
        engagementSQL.append(groupBy)
        let engagement = try connection.query(engagementSQL).rows.map { row in
            var counts = FunnelCounts()
            for (index, stage) in stages.enumerated() { counts[stage] = try row.decode(5 + index) }
            return EngagementRow(appID: try row.decode(0), category: try row.decode(1),
                                 presentation: ObservedPresentation(rawValue: try row.decode(2)) ?? .unknown,
                                 attachmentKind: try row.decode(3),
                                 day: UTCDay(Timestamp(microsecondsSinceEpoch: try row.cell(4).unixMicroseconds())),
                                 counts: counts)
        }
        var actions: [ActionCountRow] = []
        if grouping == .action {
            var actionSQL: SQL = """
                SELECT app_id, category, presentation, attachment_kind, action_id, sum(notifications)::int8, min(day)
                FROM engagement_actions_daily WHERE
                """
            actionSQL.append(filter)
            actionSQL.append(" GROUP BY 1, 2, 3, 4, 5")
            actions = try connection.query(actionSQL).rows.map { row in
                ActionCountRow(appID: try row.decode(0), category: try row.decode(1),
                               presentation: ObservedPresentation(rawValue: try row.decode(2)) ?? .unknown,
                               attachmentKind: try row.decode(3),
                               day: UTCDay(Timestamp(microsecondsSinceEpoch: try row.cell(6).unixMicroseconds())),
                               actionID: try row.decode(4), count: try row.decode(5))
            }
        }
        // Histograms are merged here rather than by an SQL aggregate: summing a few hundred arrays
        // element by element is much cheaper in Swift. Byte sums are numeric (migration 019), read
        // in text into 128 bits: exact, for the mean (the total shown is held at Int64.max).
        var telemetrySQL: SQL = """
            SELECT app_id, category, attachment_kind, day, delivered, attached, timeout, too_large, unsupported_format,
                   download_failed, not_requested, time_will_expire, cache_hits, network_fetches,
                   bytes::text, bytes_reported, download_ms_histogram, processing_ms_histogram
            FROM extension_telemetry_daily WHERE
            """
        telemetrySQL.append(filter)
        let telemetry = try connection.query(telemetrySQL).rows.map { row in
            TelemetryRow(appID: try row.decode(0), category: try row.decode(1), attachmentKind: try row.decode(2),
                         day: UTCDay(Timestamp(microsecondsSinceEpoch: try row.cell(3).unixMicroseconds())),
                         delivered: try row.decode(4),
                         outcomes: [.attached: try row.decode(5), .timeout: try row.decode(6), .tooLarge: try row.decode(7),
                                    .unsupportedFormat: try row.decode(8), .downloadFailed: try row.decode(9),
                                    .notRequested: try row.decode(10)],
                         timeWillExpire: try row.decode(11), cacheHits: try row.decode(12), networkFetches: try row.decode(13),
                         bytes: try Self.byteSum(try row.decode(14)), bytesReported: try row.decode(15),
                         downloadHistogram: Self.histogram(try row.decode(16, as: [Int64].self)),
                         processingHistogram: Self.histogram(try row.decode(17, as: [Int64].self)))
        }
        var filters = ReportFilters()
        if let appID { filters.appIDs = [appID] }
        if let category { filters.categories = [category] }
        filters.from = from
        filters.through = through
        // The device moments span every day: read only for a report over every day. One row per
        // app and category, so this read costs the same for any size of log.
        let moments = from == nil && through == nil
            ? try DeviceMomentStore.read(appID: appID, category: category, on: connection) : []
        let devices = category == nil && !moments.isEmpty
            ? DevicePairMomentStore.withPairsKept(moments, appsBeyondLimit: try DevicePairMomentStore.appsBeyondLimit(appID: appID, on: connection))
            : moments
        // Pairs of categories matter only to an adjusted answer over several categories.
        let devicePairs = from == nil && through == nil && category == nil
            ? try DevicePairMomentStore.read(appID: appID, on: connection) : []
        return EngagementReport.build(engagement: engagement, actions: actions, telemetry: telemetry, devices: devices,
                                      devicePairs: devicePairs, grouping: grouping, filters: filters, generatedAt: now)
    }

    private func filterSQL() -> SQL {
        let fromDay = from?.description
        let throughDay = through?.description
        return """
            (\(appID)::text IS NULL OR app_id = \(appID))
            AND (\(category)::text IS NULL OR category = \(category))
            AND (\(fromDay)::date IS NULL OR day >= \(fromDay)::date)
            AND (\(throughDay)::date IS NULL OR day <= \(throughDay)::date)
            """
    }

    /// A stored byte sum: an integer of numeric's text, at most 2^53 times the notifications.
    static func byteSum(_ text: String) throws -> Int128 {
        guard let value = Int128(text) else {
            throw PostgresError(kind: .decoding, message: "a byte sum is not an integer of 128 bits")
        }
        return value
    }

    /// Stored counts are trimmed after the last used bucket; pad them back to the layout.
    static func histogram(_ counts: [Int64]) -> LatencyHistogram {
        let length = LatencyHistogram.Layout.standard.countsLength
        var padded = Array(counts.prefix(length))
        padded += [Int64](repeating: 0, count: length - padded.count)
        return (try? LatencyHistogram(counts: padded.map { max(0, $0) })) ?? LatencyHistogram()
    }
}
