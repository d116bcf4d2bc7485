import EngageCore
import EventStore
import Postgres

/// The engagement read model's SQL: loading notification states, applying a batch's changes and
/// moving the checkpoint, all on a connection inside the caller's transaction.
public enum EngagementStore {
    public static let projectionName = "engagement"

    // MARK: Checkpoint

    /// Begins a batch inside the caller's transaction: turns JIT compilation off for it and, unless
    /// `waitsForFlush`, lets its commit return before the WAL is flushed; then locks the
    /// checkpoint and returns it.
    ///
    /// A batch's statements are small and run a few times a second; the lookup of a batch's
    /// stored states (an index probe per notification) is estimated above `jit_above_cost` and
    /// was compiled on every batch: 87-105 ms for 20,000 keys with JIT against 52-77 ms without,
    /// on the same backend (BENCHMARKS.md, "2026-12-03 08:04-09:38 UTC").
    ///
    /// A projector's batch need not wait for the flush (`synchronous_commit = off`): everything it
    /// writes can be folded again from the log, and its checkpoint commits with it, so a batch lost
    /// with the server (the commits of the last three `wal_writer_delay`s, or what a promoted
    /// standby had not received) takes its checkpoint along: the projector's broken connection
    /// makes it start again from the stored checkpoint, or a batcher that reaches the server on a
    /// sound connection finds the checkpoint behind its own position, is fenced and forgets its
    /// caches. Nothing is counted twice or lost, and the projector stops waiting on the disk (and
    /// on a synchronous standby). A swap that a command reports as done (a rebuild) keeps the
    /// session's setting. Both settings are local to the transaction, so the connection goes back
    /// to the pool with its own.
    static func beginBatch(_ name: String, waitsForFlush: Bool, on connection: Connection) throws -> LogPosition {
        _ = try connection.query("""
            SELECT set_config('jit', 'off', true),
                   set_config('synchronous_commit', CASE WHEN \(waitsForFlush) THEN current_setting('synchronous_commit') ELSE 'off' END, true)
            """)
        return try lockCheckpoint(name, on: connection)
    }

    /// Locks the projection's checkpoint row for this transaction and returns it.
    public static func lockCheckpoint(_ name: String, on connection: Connection) throws -> LogPosition {
        try connection.execute("INSERT INTO projection_checkpoints (projection) VALUES (\(name)) ON CONFLICT DO NOTHING")
        let row = try connection.query("""
            SELECT transaction_id, position FROM projection_checkpoints WHERE projection = \(name) FOR UPDATE
            """)[0]
        return LogPosition(transactionID: try row.decode(0), sequence: try row.decode(1))
    }

    /// The stored device rows and telemetry histograms the batcher remembers (`DeviceRowCache`,
    /// `TelemetryHistogramCache`), which `apply` reads instead of the tables.
    typealias Caches = (devices: DeviceRowCache, histograms: TelemetryHistogramCache)

    /// The table's oid: a rebuild's swap replaces the live tables by new ones, under the same names.
    static func tableIdentity(_ table: String, on connection: Connection) throws -> Int64 {
        try connection.query("SELECT \(table)::regclass::oid::int8")[0].decode(0, as: Int64.self)
    }

    public static func checkpoint(_ name: String, on connection: Connection) throws -> LogPosition {
        let rows = try connection.query("SELECT transaction_id, position FROM projection_checkpoints WHERE projection = \(name)")
        guard let row = rows.rows.first else { return .start }
        return LogPosition(transactionID: try row.decode(0), sequence: try row.decode(1))
    }

    public static func moveCheckpoint(_ name: String, to position: LogPosition, events: Int, on connection: Connection) throws {
        try connection.execute("""
            INSERT INTO projection_checkpoints (projection, transaction_id, position, events_processed, updated_at)
            VALUES (\(name), \(String(position.transactionID))::xid8, \(position.sequence), \(events), now())
            ON CONFLICT (projection) DO UPDATE SET
                transaction_id = EXCLUDED.transaction_id, position = EXCLUDED.position,
                events_processed = projection_checkpoints.events_processed + EXCLUDED.events_processed,
                updated_at = now()
            """)
    }

    // MARK: States

    public static func statesAreEmpty(tables: ReadModelTables = .live, on connection: Connection) throws -> Bool {
        try isEmpty(tables.states, on: connection)
    }

    /// About how many states `tables.states` holds (the planner's estimate; negative until the
    /// table was first vacuumed or analyzed).
    static func estimatedStates(tables: ReadModelTables, on connection: Connection) throws -> Int {
        try connection.query("SELECT reltuples::int8 FROM pg_class WHERE oid = \(tables.states)::regclass")[0].decode(0, as: Int.self)
    }

    /// Up to `limit` keys of stored states, in key order, after `after` (nil: from the first):
    /// a walk of the primary key.
    static func storedKeys(after: NotificationKey?, limit: Int, tables: ReadModelTables,
                           on connection: Connection) throws -> [NotificationKey] {
        let rows: QueryResult
        if let after {
            rows = try connection.query("""
                SELECT s.app_id, s.notification_id
                FROM \(unsafeSQL: tables.states) s
                WHERE (s.app_id, s.notification_id) > (\(after.appID), \(after.notificationID))
                ORDER BY s.app_id, s.notification_id LIMIT \(limit)
                """)
        } else {
            rows = try connection.query("""
                SELECT s.app_id, s.notification_id
                FROM \(unsafeSQL: tables.states) s
                ORDER BY s.app_id, s.notification_id LIMIT \(limit)
                """)
        }
        return try rows.rows.map { NotificationKey(appID: try $0.decode(0), notificationID: try $0.decode(1)) }
    }

    public static func loadStates(_ keys: [NotificationKey], tables: ReadModelTables = .live,
                                  on connection: Connection) throws -> [NotificationKey: NotificationState] {
        if keys.isEmpty { return [:] }
        let rows = try connection.query("""
            SELECT s.app_id, s.notification_id, s.state
            FROM \(unsafeSQL: tables.states) s
            JOIN unnest(\(keys.map(\.appID))::text[], \(keys.map(\.notificationID))::text[]) AS k(app_id, notification_id)
              USING (app_id, notification_id)
            """)
        var states: [NotificationKey: NotificationState] = [:]
        states.reserveCapacity(rows.rowCount)
        for row in rows.rows {
            let key = NotificationKey(appID: try row.decode(0), notificationID: try row.decode(1))
            states[key] = try NotificationState(encoded: try row.cell(2).utf8Bytes())
        }
        return states
    }

    // MARK: Applying changes

    /// Writes one batch's changes. Only inside the caller's transaction, the one that also moves
    /// the checkpoint (the batcher's, the rebuild's): on its own a failure half way would leave
    /// some tables counted and the checkpoint behind, and the retry would count them twice.
    /// `caches` (nil: none) give the stored device rows and histograms they know; returns what
    /// they record once the batch committed.
    @discardableResult
    static func apply(_ changes: EngagementChanges, tables: ReadModelTables = .live, caches: Caches? = nil,
                      on connection: Connection) throws -> Written {
        try saveStates(changes.states, created: changes.created, tables: tables, on: connection)
        try applyEngagement(changes.engagement, tables: tables, on: connection)
        try applyActions(changes.actions, tables: tables, on: connection)
        let histograms = try applyTelemetry(changes.telemetry, tables: tables, cache: caches?.histograms, on: connection)
        let devices = try DeviceMomentStore.apply(changes.devices, tables: tables, cache: caches?.devices, on: connection)
        return Written(devices: devices, histograms: histograms)
    }

    /// What `apply` wrote that the batcher's caches record once the batch committed.
    struct Written {
        var devices: [DeviceRowCache.DeviceKey: DeviceRowCache.DeviceRows] = [:]
        /// Nil: the batch removed a telemetry row.
        var histograms: [EngagementChanges.TelemetryKey: TelemetryHistogramCache.Histograms]? = [:]
    }

    /// True when `table` (one of `ReadModelTables`' names) has no rows.
    static func isEmpty(_ table: String, on connection: Connection) throws -> Bool {
        try connection.query("SELECT NOT EXISTS (SELECT 1 FROM \(unsafeSQL: table))")[0].decode(0, as: Bool.self)
    }

    /// Writes `states`: those in `created` (no stored state yet) by binary COPY straight into the
    /// table, the others through a staging table and one upsert. A stored state the caller did
    /// not know of would make the COPY fail on the primary key and the batch roll back, never
    /// count twice.
    static func saveStates(_ states: [NotificationKey: NotificationState], created: Set<NotificationKey>,
                           tables: ReadModelTables, on connection: Connection) throws {
        if states.isEmpty { return }
        var inserted = BinaryCopyEncoder(reservingCapacity: created.count * 600)
        var updated = BinaryCopyEncoder(reservingCapacity: (states.count - created.count) * 600)
        var updates = 0
        for (key, state) in states {
            let isNew = created.contains(key)
            if !isNew { updates += 1 }
            func append(_ copy: inout BinaryCopyEncoder) {
                copy.beginRow(columnCount: 3)
                copy.appendText(key.appID)
                copy.appendText(key.notificationID)
                copy.appendBytea(state.encoded())
            }
            if isNew { append(&inserted) } else { append(&updated) }
        }
        if updates < states.count {
            try connection.copyIn("COPY \(unsafeSQL: tables.states) (app_id, notification_id, state) FROM STDIN (FORMAT binary)",
                                  data: inserted.finish())
        }
        if updates == 0 { return }
        // Binary COPY into a staging table, then one upsert: no array literals to build or parse for
        // what is the largest part of each batch. The table lasts until the transaction commits,
        // never the session (EventStore's `createStaging` says why).
        try connection.execute("""
            CREATE TEMP TABLE IF NOT EXISTS staged_states_v2 (app_id text, notification_id text, state bytea) ON COMMIT DROP
            """)
        try connection.copyIn("COPY staged_states_v2 FROM STDIN (FORMAT binary)", data: updated.finish())
        try connection.execute("""
            INSERT INTO \(unsafeSQL: tables.states) AS t (app_id, notification_id, state)
            SELECT app_id, notification_id, state FROM staged_states_v2
            ON CONFLICT (app_id, notification_id) DO UPDATE SET state = EXCLUDED.state
            """)
        try connection.execute("TRUNCATE staged_states_v2")
    }

    static func applyEngagement(_ deltas: [EngagementChanges.EngagementKey: EngagementContribution.Counters],
                                tables: ReadModelTables, on connection: Connection) throws {
        let changed = deltas.filter { $0.value != .zero }
        if changed.isEmpty { return }
        // One column (and one array of changes) per stage the read model keeps.
        let stages = FunnelStage.keptPerBucket
        var columns = BucketColumns()
        var counts: [[Int64]] = Array(repeating: [], count: stages.count)
        for (key, counters) in changed {
            columns.append(app: key.appID, key.bucket)
            for (index, stage) in stages.enumerated() { counts[index].append(Int64(counters[stage])) }
        }
        var upsert: SQL = """
            INSERT INTO \(unsafeSQL: tables.engagement) AS t
                (app_id, category, presentation, attachment_kind, day, \(fragment: SQL.list(stages.map { "\(identifier: $0.name)" })))
            SELECT * FROM unnest(\(columns.apps)::text[], \(columns.categories)::text[], \(columns.presentations)::text[],
                                 \(columns.kinds)::text[], \(columns.days)::date[],
                                 \(fragment: SQL.list(counts.map { "\($0)::int8[]" })))
            ON CONFLICT (app_id, category, presentation, attachment_kind, day) DO UPDATE SET
            """
        upsert.append(SQL.list(stages.map { "\(identifier: $0.name) = t.\(identifier: $0.name) + EXCLUDED.\(identifier: $0.name)" }))
        try connection.execute(upsert)
        // A bucket every notification has left is removed, so the model does not depend on the
        // order in which events arrived (a rebuild equals it row for row).
        try connection.execute("""
            DELETE FROM \(unsafeSQL: tables.engagement) t
            USING unnest(\(columns.apps)::text[], \(columns.categories)::text[], \(columns.presentations)::text[],
                         \(columns.kinds)::text[], \(columns.days)::date[]) AS k(app_id, category, presentation, attachment_kind, day)
            WHERE t.app_id = k.app_id AND t.category = k.category AND t.presentation = k.presentation
              AND t.attachment_kind = k.attachment_kind AND t.day = k.day AND t.notifications = 0
            """)
    }

    static func applyActions(_ deltas: [EngagementChanges.ActionKey: Int], tables: ReadModelTables, on connection: Connection) throws {
        let changed = deltas.filter { $0.value != 0 }
        if changed.isEmpty { return }
        var columns = BucketColumns()
        var actionIDs: [String] = [], counts: [Int64] = []
        for (key, count) in changed {
            columns.append(app: key.appID, key.bucket)
            actionIDs.append(key.actionID)
            counts.append(Int64(count))
        }
        try connection.execute("""
            INSERT INTO \(unsafeSQL: tables.actions) AS t
                (app_id, category, presentation, attachment_kind, day, action_id, notifications)
            SELECT * FROM unnest(\(columns.apps)::text[], \(columns.categories)::text[], \(columns.presentations)::text[],
                                 \(columns.kinds)::text[], \(columns.days)::date[], \(actionIDs)::text[], \(counts)::int8[])
            ON CONFLICT (app_id, category, presentation, attachment_kind, day, action_id) DO UPDATE SET
                notifications = t.notifications + EXCLUDED.notifications
            """)
        try connection.execute("""
            DELETE FROM \(unsafeSQL: tables.actions) t
            USING unnest(\(columns.apps)::text[], \(columns.categories)::text[], \(columns.presentations)::text[],
                         \(columns.kinds)::text[], \(columns.days)::date[], \(actionIDs)::text[])
                  AS k(app_id, category, presentation, attachment_kind, day, action_id)
            WHERE t.app_id = k.app_id AND t.category = k.category AND t.presentation = k.presentation
              AND t.attachment_kind = k.attachment_kind AND t.day = k.day AND t.action_id = k.action_id AND t.notifications = 0
            """)
    }

    /// `cache` (nil: none) gives the stored histograms it knows; the others are read. Returns the
    /// histograms written, for the caller's cache once the batch committed, or nil when the batch
    /// removed a row (the cache must forget).
    @discardableResult
    static func applyTelemetry(_ deltas: [EngagementChanges.TelemetryKey: EngagementChanges.TelemetryDelta],
                               tables: ReadModelTables, cache: TelemetryHistogramCache? = nil,
                               on connection: Connection) throws -> [EngagementChanges.TelemetryKey: TelemetryHistogramCache.Histograms]? {
        let changed = Array(deltas.filter { $0.value != EngagementChanges.TelemetryDelta() })
        if changed.isEmpty { return [:] }
        var apps: [String] = [], categories: [String] = [], kinds: [String] = [], days: [String] = []
        var counts: [[Int64]] = Array(repeating: [], count: 11)
        // Exact byte sums, as decimal text for the numeric column (Counters.bytes is 128 bits).
        var byteSums: [String] = []
        var downloads: [String] = [], processing: [String] = []
        for (key, _) in changed {
            apps.append(key.appID)
            categories.append(key.bucket.category)
            kinds.append(key.bucket.attachmentKind.rawValue)
            days.append(key.bucket.day.description)
        }
        let stored = try cache.map { cache in
            let (known, unknown) = cache.lookup(changed.map(\.key))
            if unknown.isEmpty { return known }
            let read = try storedHistograms(apps: unknown.map { apps[$0] }, categories: unknown.map { categories[$0] },
                                            kinds: unknown.map { kinds[$0] }, days: unknown.map { days[$0] }, tables: tables, on: connection)
            return known.merging(read.map { (unknown[$0.key], $0.value) }) { cached, _ in cached }
        } ?? storedHistograms(apps: apps, categories: categories, kinds: kinds, days: days, tables: tables, on: connection)
        var written: [EngagementChanges.TelemetryKey: TelemetryHistogramCache.Histograms] = [:]
        for (index, (key, delta)) in changed.enumerated() {
            let c = delta.counters
            let values = [c.delivered, c.outcomes[.attached] ?? 0, c.outcomes[.timeout] ?? 0, c.outcomes[.tooLarge] ?? 0,
                          c.outcomes[.unsupportedFormat] ?? 0, c.outcomes[.downloadFailed] ?? 0, c.outcomes[.notRequested] ?? 0,
                          c.timeWillExpire, c.cacheHits, c.networkFetches, c.bytesReported]
            for (index, value) in values.enumerated() { counts[index].append(Int64(value)) }
            byteSums.append(String(c.bytes))
            let histograms = TelemetryHistogramCache.Histograms(
                downloads: adding(delta.downloadBuckets, to: stored[index]?.downloads ?? []),
                processing: adding(delta.processingBuckets, to: stored[index]?.processing ?? []))
            written[key] = histograms
            downloads.append(arrayLiteral(histograms.downloads))
            processing.append(arrayLiteral(histograms.processing))
        }
        try connection.execute("""
            INSERT INTO \(unsafeSQL: tables.telemetry) AS t
                (app_id, category, attachment_kind, day, delivered, attached, timeout, too_large, unsupported_format,
                 download_failed, not_requested, time_will_expire, cache_hits, network_fetches, bytes, bytes_reported,
                 download_ms_histogram, processing_ms_histogram)
            SELECT u.app_id, u.category, u.kind, u.day, u.c0, u.c1, u.c2, u.c3, u.c4, u.c5, u.c6, u.c7, u.c8, u.c9, u.bytes, u.c10,
                   u.downloads::bigint[], u.processing::bigint[]
            FROM unnest(\(apps)::text[], \(categories)::text[], \(kinds)::text[], \(days)::date[],
                        \(counts[0])::int8[], \(counts[1])::int8[], \(counts[2])::int8[], \(counts[3])::int8[],
                        \(counts[4])::int8[], \(counts[5])::int8[], \(counts[6])::int8[], \(counts[7])::int8[],
                        \(counts[8])::int8[], \(counts[9])::int8[], \(byteSums)::numeric[], \(counts[10])::int8[],
                        \(downloads)::text[], \(processing)::text[])
                AS u(app_id, category, kind, day, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, bytes, c10, downloads, processing)
            ON CONFLICT (app_id, category, attachment_kind, day) DO UPDATE SET
                delivered = t.delivered + EXCLUDED.delivered,
                attached = t.attached + EXCLUDED.attached,
                timeout = t.timeout + EXCLUDED.timeout,
                too_large = t.too_large + EXCLUDED.too_large,
                unsupported_format = t.unsupported_format + EXCLUDED.unsupported_format,
                download_failed = t.download_failed + EXCLUDED.download_failed,
                not_requested = t.not_requested + EXCLUDED.not_requested,
                time_will_expire = t.time_will_expire + EXCLUDED.time_will_expire,
                cache_hits = t.cache_hits + EXCLUDED.cache_hits,
                network_fetches = t.network_fetches + EXCLUDED.network_fetches,
                bytes = t.bytes + EXCLUDED.bytes,
                bytes_reported = t.bytes_reported + EXCLUDED.bytes_reported,
                download_ms_histogram = EXCLUDED.download_ms_histogram,
                processing_ms_histogram = EXCLUDED.processing_ms_histogram
            """)
        let removed = try connection.execute("""
            DELETE FROM \(unsafeSQL: tables.telemetry) t
            USING unnest(\(apps)::text[], \(categories)::text[], \(kinds)::text[], \(days)::date[]) AS k(app_id, category, attachment_kind, day)
            WHERE t.app_id = k.app_id AND t.category = k.category AND t.attachment_kind = k.attachment_kind
              AND t.day = k.day AND t.delivered = 0
            """)
        return removed == 0 ? written : nil
    }

    /// The stored histograms of the given telemetry rows, by the rows' index in the arrays, locked
    /// until the batch commits (a row deleted meanwhile is not returned, and is written anew).
    ///
    /// The batch adds its histogram changes to them here and writes the sums whole: adding the
    /// arrays in PostgreSQL (`engage_add_counts`, an aggregate over `unnest`) and recompressing
    /// the rewritten rows cost about 0.3 s a batch on the benchmark's log, as much as the rest of
    /// the batch's writes.
    static func storedHistograms(apps: [String], categories: [String], kinds: [String], days: [String],
                                 tables: ReadModelTables, on connection: Connection) throws -> [Int: TelemetryHistogramCache.Histograms] {
        let rows = try connection.query("""
            SELECT k.n, t.download_ms_histogram, t.processing_ms_histogram
            FROM \(unsafeSQL: tables.telemetry) t
            JOIN unnest(\(apps)::text[], \(categories)::text[], \(kinds)::text[], \(days)::date[]) WITH ORDINALITY
                AS k(app_id, category, attachment_kind, day, n)
              USING (app_id, category, attachment_kind, day)
            FOR UPDATE OF t
            """)
        var stored: [Int: TelemetryHistogramCache.Histograms] = [:]
        for row in rows.rows {
            stored[try row.decode(0, as: Int.self) - 1] = TelemetryHistogramCache.Histograms(downloads: try row.decode(1), processing: try row.decode(2))
        }
        return stored
    }

    /// `stored` plus the dense counts of `buckets`, ending at the highest bucket left in use: a
    /// notification that leaves the highest bucket (a late event moves it to another day, or to a
    /// faster download) leaves no zeros behind, so the row equals a rebuild's, which never held it.
    static func adding(_ buckets: [Int: Int64], to stored: [Int64]) -> [Int64] {
        let used = buckets.filter { $0.value != 0 }
        let length = max(stored.count, (used.keys.max() ?? -1) + 1)
        var dense = stored + [Int64](repeating: 0, count: length - stored.count)
        for (index, count) in used { dense[index] += count }
        while dense.last == 0 { dense.removeLast() }
        return dense
    }

    /// An array literal (`{0,0,3,-1}`), written byte by byte: a histogram is hundreds of counts,
    /// most of them 0, twice for every telemetry row of every batch.
    static func arrayLiteral(_ counts: [Int64]) -> String {
        var text: [UInt8] = [UInt8(ascii: "{")]
        text.reserveCapacity(2 + 2 * counts.count)
        for (index, count) in counts.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            if count == 0 { text.append(UInt8(ascii: "0")) } else { text.append(contentsOf: String(count).utf8) }
        }
        text.append(UInt8(ascii: "}"))
        return String(decoding: text, as: UTF8.self)
    }
}

/// Bucket columns shared by the engagement and action tables.
struct BucketColumns {
    var apps: [String] = []
    var categories: [String] = []
    var presentations: [String] = []
    var kinds: [String] = []
    var days: [String] = []

    mutating func append(app: String, _ bucket: EngagementContribution.Bucket) {
        apps.append(app)
        categories.append(bucket.category)
        presentations.append(bucket.presentation.rawValue)
        kinds.append(bucket.attachmentKind?.rawValue ?? "unknown")
        days.append(bucket.day.description)
    }
}
