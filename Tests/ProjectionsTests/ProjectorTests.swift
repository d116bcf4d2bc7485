@testable import EngageCore
import EventStore
import Foundation
import Postgres
@testable import Projections
import Runtime
import Synchronization
import Testing
import TestSupport

@Suite("Engagement projector")
struct ProjectorTests {
    let pool: ConnectionPool
    let store: EventStore

    init() throws {
        pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 6)
        store = EventStore(pool: pool)
    }

    func makeProjector(_ pool: ConnectionPool? = nil, batchSize: Int = 97) -> Projector {
        var configuration = Projector.Configuration()
        configuration.batchSize = batchSize
        configuration.pollInterval = .milliseconds(100)
        return Projector(pool: pool ?? self.pool, configuration: configuration,
                         logger: Logger(label: "test", sink: MemoryLogSink()), metrics: ProjectorMetrics(registry: MetricsRegistry()))
    }

    /// Waits until the projector's checkpoint reaches the last event stored.
    func waitUntilCaughtUp(timeout: Duration = .seconds(60)) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if try await ReadModelSnapshot.isCaughtUp(pool) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("projector did not catch up")
    }

    /// Rebuilds the read model from the log beside the running projector, then stops it: the
    /// rebuilt model must equal the one kept batch by batch, row for row.
    func expectARebuildEqualsTheModel(stopping running: Task<Void, any Error>) async throws {
        let incremental = try await ReadModelSnapshot.rows(pool)
        try await EngagementRebuild(pool: pool).run()
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value
        #expect(try await ReadModelSnapshot.rows(pool) == incremental)
    }

    /// Runs a new projector (its cache empty: states come from the table) until it caught up.
    func catchUpWithFreshProjector() async throws {
        let projector = makeProjector()
        let running = Task { try await projector.run() }
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value
    }

    func count(_ sql: SQL) async throws -> Int {
        try await pool.withConnection { try $0.query(sql)[0].decode(0, as: Int.self) }
    }

    /// The projector's and the report's SQL name a column per stage of
    /// `FunnelStage.keptPerBucket`: the migrations must have made exactly those, in that order.
    @Test func theReadModelHasAColumnPerStageItKeeps() async throws {
        let columns = try await pool.withConnection { connection in
            try connection.query("""
                SELECT column_name::text FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'engagement_daily' AND data_type = 'bigint'
                ORDER BY ordinal_position
                """).rows.map { try $0.decode(0, as: String.self) }
        }
        #expect(columns == FunnelStage.keptPerBucket.map(\.name))
    }

    @Test(.timeLimit(.minutes(2)))
    func lateAndOutOfOrderEventsAreCountedOnceWhereTheyBelong() async throws {
        let items = ProjectionFixtures.scrambled(ProjectionFixtures.events(notifications: 300, seed: 1), seed: 2)
        let projector = makeProjector()
        let running = Task { try await projector.run() }
        // Arrive in small batches, displays often after actions, plus a retried batch.
        for chunk in stride(from: 0, to: items.count, by: 40).map({ Array(items[$0..<min($0 + 40, items.count)]) }) {
            _ = try await store.append(chunk)
        }
        _ = try await store.append(Array(items.prefix(40)))
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value

        // Expected: fold every notification's events from scratch, in memory.
        let allEvents = items.map(\.event)
        var states: [String: NotificationState] = [:]
        for event in allEvents { states[event.notificationID, default: NotificationState()].apply(event) }
        let contributions = states.values.compactMap(\.engagementContribution)
        #expect(try await count("SELECT sum(notifications)::int8 FROM engagement_daily") == 300)
        #expect(try await count("SELECT sum(displayed)::int8 FROM engagement_daily") == 300)
        #expect(try await count("SELECT count(*) FROM engagement_daily WHERE presentation = 'unknown'") == 0)
        #expect(try await count("SELECT sum(expanded)::int8 FROM engagement_daily") == contributions.reduce(0) { $0 + $1.counters[.expanded] })
        #expect(try await count("SELECT sum(opened)::int8 FROM engagement_daily") == contributions.reduce(0) { $0 + $1.counters[.opened] })
        #expect(try await count("SELECT sum(replied)::int8 FROM engagement_daily") == contributions.reduce(0) { $0 + $1.counters[.replied] })
        let richExpanded = contributions.filter { $0.bucket.presentation == .rich }.reduce(0) { $0 + $1.counters[.expanded] }
        #expect(try await count("SELECT sum(expanded)::int8 FROM engagement_daily WHERE presentation = 'rich'") == richExpanded)
        #expect(try await count("SELECT sum(notifications)::int8 FROM engagement_actions_daily WHERE action_id = 'like'")
                == contributions.reduce(0) { $0 + ($1.counters.actions["like"] ?? 0) })
        #expect(try await count("SELECT sum(delivered)::int8 FROM extension_telemetry_daily") == 300)
        #expect(try await count("SELECT count(*) FROM notification_states") == 300)
        #expect(try await count("SELECT events_processed FROM projection_checkpoints WHERE projection = 'engagement'") == items.count)
    }

    /// A log row that does not decode as an event (never expected: ingestion checked every
    /// event) is left out of the read model, as a rebuild leaves it out, so no comparison with a
    /// rebuild can show it: the projector counts it on /metrics and logs it.
    @Test(.timeLimit(.minutes(2)))
    func anUndecodableEventIsCountedAndLogged() async throws {
        _ = try await store.append(ProjectionFixtures.events(notifications: 5, seed: 61))
        _ = try await pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
                SELECT gen_random_uuid(), app_id, notification_id, 'unknown-type', category, device_id, occurred_at, payload
                FROM events LIMIT 1
                """)
        }
        try await TestPostgres.waitForEarlierTransactions(pool)
        let registry = MetricsRegistry()
        let log = MemoryLogSink()
        var configuration = Projector.Configuration()
        configuration.pollInterval = .milliseconds(100)
        let projector = Projector(pool: pool, configuration: configuration, logger: Logger(label: "test", sink: log),
                                  metrics: ProjectorMetrics(registry: registry))
        let running = Task { try await projector.run() }
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value
        #expect(registry.renderPrometheus().contains("\nengage_projector_undecodable_events_total 1\n"))
        #expect(log.lines.contains { $0.contains("projector.undecodable") && $0.contains("events=1") })
    }

    /// A session that ends holding a temporary table drops it in a transaction of its own, whose
    /// commit waits for the synchronous standby; once a switchover has promoted that standby, the
    /// old primary's backend never exits and its shutdown hangs. So the projector's staging tables
    /// and the careful append's last only until their transaction commits. Checked while the
    /// sessions are still open: `pg_class` lists every session's temporary tables.
    @Test(.timeLimit(.minutes(2)))
    func noSessionKeepsATemporaryTableBeyondItsTransaction() async throws {
        let items = ProjectionFixtures.scrambled(ProjectionFixtures.events(notifications: 120, seed: 5), seed: 6)
        let projector = makeProjector()
        let running = Task { try await projector.run() }
        // Small batches rewrite stored states and device rows (the staged upserts); the resent
        // batch takes the append's careful path (its staging table).
        for chunk in stride(from: 0, to: items.count, by: 40).map({ Array(items[$0..<min($0 + 40, items.count)]) }) {
            _ = try await store.append(chunk)
            try await waitUntilCaughtUp()
        }
        let resent = try await store.append(Array(items.prefix(40)))
        #expect(resent.duplicateCount == 40)
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value
        #expect(try await count("SELECT count(*) FROM pg_class WHERE relpersistence = 't'") == 0)
    }

    @Test(.timeLimit(.minutes(2)))
    func actionBeforeDisplayMovesTheNotificationFromUnknownToRich() async throws {
        let projector = makeProjector()
        let running = Task { try await projector.run() }
        let at = ProjectionFixtures.start
        func event(_ n: UInt64, _ seconds: Int64, _ details: EventDetails) -> AppendItem {
            AppendItem(appID: "app-1", event: Event(eventID: ProjectionFixtures.id(99, n), notificationID: "late", deviceID: "d",
                                                    category: "new_photo", occurredAt: at.adding(microseconds: seconds * 1_000_000), details: details))
        }
        _ = try await store.append([event(1, 10, .action(ActionDetails(actionID: "like")))])
        try await waitUntilCaughtUp()
        #expect(try await count("SELECT sum(actioned)::int8 FROM engagement_daily WHERE presentation = 'unknown'") == 1)
        _ = try await store.append([event(2, 1, .displayed(DisplayedDetails(presentation: .rich, attachmentKind: .image)))])
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value
        #expect(try await count("SELECT coalesce(sum(notifications), 0)::int8 FROM engagement_daily WHERE presentation = 'unknown'") == 0)
        #expect(try await count("SELECT sum(actioned)::int8 FROM engagement_daily WHERE presentation = 'rich' AND attachment_kind = 'image'") == 1)
        #expect(try await count("SELECT sum(notifications)::int8 FROM engagement_daily") == 1)
        #expect(try await count("SELECT sum(notifications)::int8 FROM engagement_actions_daily WHERE presentation = 'rich'") == 1)
    }

    /// A newer engage migrating while an older one rebuilds (019 widened a column of a read-model
    /// table): the rebuild's copies were made before, with the old schema, and swapping them in
    /// would undo the migration that the database records as applied. The swap refuses instead.
    @Test(.timeLimit(.minutes(2)))
    func aRebuildDoesNotSwapInCopiesMadeBeforeANewerEngageMigrated() async throws {
        _ = try await store.append(ProjectionFixtures.events(notifications: 60, seed: 5))
        // The newer engage's session: it migrates once, during the rebuild's catch-up.
        let newerEngage = Mutex<Connection?>(try Connection(configuration: pool.configuration))
        await #expect(throws: MigrationError.unknownApplied(version: 999, name: "newer")) {
            try await EngagementRebuild(pool: pool, batchSize: 50).run { _ in
                newerEngage.withLock { session in
                    guard let connection = session else { return }
                    _ = try? connection.execute("ALTER TABLE extension_telemetry_daily ADD COLUMN added_by_newer integer")
                    _ = try? connection.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES (999, 'newer', 'x')")
                    connection.close()
                    session = nil
                }
            }
        }
        #expect(newerEngage.withLock { $0 == nil })
        #expect(try await count("""
            SELECT count(*) FROM pg_attribute
            WHERE attrelid = 'extension_telemetry_daily'::regclass AND attname = 'added_by_newer'
            """) == 1)
        #expect(try await count("SELECT count(*) FROM pg_class WHERE relname LIKE '%\\_rebuild'") == 0)
    }

    /// The read model's index names, "table:index", in order.
    func readModelIndexNames() async throws -> [String] {
        let tables = ReadModelTables.live.all.map { "'\($0)'" }.joined(separator: ",")
        return try await pool.withConnection { connection in
            try connection.query(SQL(unsafeSQL: """
                SELECT indrelid::regclass::text || ':' || indexrelid::regclass::text FROM pg_index
                WHERE indrelid::regclass::text IN (\(tables)) ORDER BY 1
                """)).rows.map { try $0.decode(0, as: String.self) }
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func rebuildEqualsTheIncrementalModelRowForRow() async throws {
        let projector = makeProjector(batchSize: 53)
        let running = Task { try await projector.run() }
        // Concurrent ingestion from several writers while the projector runs.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    let items = ProjectionFixtures.scrambled(ProjectionFixtures.events(notifications: 150, seed: UInt64(10 + writer)), seed: 7)
                    for chunk in stride(from: 0, to: items.count, by: 25).map({ Array(items[$0..<min($0 + 25, items.count)]) }) {
                        _ = try await store.append(chunk)
                    }
                }
            }
            try await group.waitForAll()
        }
        try await waitUntilCaughtUp()
        let incremental = try await ReadModelSnapshot.rows(pool)
        #expect(!incremental.isEmpty)
        let indexesBefore = try await readModelIndexNames()

        // Rebuild while the projector keeps running; it must notice the swap and keep going from
        // the rebuilt checkpoint (which may trail the log if other transactions hold the horizon).
        let replayed = try await EngagementRebuild(pool: pool, batchSize: 211).run()
        #expect(replayed > 0)
        try await waitUntilCaughtUp()
        #expect(try await count("SELECT events_processed FROM projection_checkpoints WHERE projection = 'engagement'")
                == (try await count("SELECT count(*) FROM events")))
        let rebuilt = try await ReadModelSnapshot.rows(pool)
        try await expectDeviceMomentsEqualPlainSQLOverTheLog()
        let onlyIncremental = Set(incremental).subtracting(rebuilt), onlyRebuilt = Set(rebuilt).subtracting(incremental)
        #expect(rebuilt.count == incremental.count)
        #expect(onlyIncremental.isEmpty, "only in the incremental model: \(onlyIncremental.sorted().prefix(3))")
        #expect(onlyRebuilt.isEmpty, "only in the rebuilt model: \(onlyRebuilt.sorted().prefix(3))")

        // The rebuilt tables keep migration 014's uncompressed storage of the rewritten columns.
        let storage = try await pool.withConnection { connection in
            try connection.query("""
                SELECT attrelid::regclass::text || '.' || attname::text, attstorage::text FROM pg_attribute
                WHERE attrelid IN ('notification_states'::regclass, 'extension_telemetry_daily'::regclass)
                  AND attname IN ('state', 'download_ms_histogram', 'processing_ms_histogram')
                ORDER BY 1
                """).rows.map { "\(try $0.decode(0, as: String.self))=\(try $0.decode(1, as: String.self))" }
        }
        #expect(storage == ["extension_telemetry_daily.download_ms_histogram=e", "extension_telemetry_daily.processing_ms_histogram=e",
                            "notification_states.state=e"])
        // ... and migration 016's fillfactor of the device rows.
        let options = try await pool.withConnection { connection in
            try connection.query("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'engagement_devices'::regclass")[0]
                .decode(0, as: String?.self)
        }
        #expect(options == "fillfactor=50")
        // ... and the names of the indexes it copied, which a later migration may use.
        #expect(try await readModelIndexNames() == indexesBefore)
        #expect(indexesBefore.contains("engagement_devices:engagement_devices_by_device"), "\(indexesBefore)")

        // After the swap the live projector continues from the rebuilt checkpoint without double counting.
        _ = try await store.append(ProjectionFixtures.events(notifications: 10, seed: 77))
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value
        #expect(try await count("SELECT sum(notifications)::int8 FROM engagement_daily") == 4 * 150 + 10)
        // The dashboard views were recreated by the swap.
        #expect(try await count("SELECT count(*) FROM engagement_rates_by_category") > 0)
    }

    /// A late event that moves a notification to another device and category (its earliest
    /// event names them) empties the old device's row and the pair it made: both are removed, and
    /// the model kept batch by batch equals a rebuild row for row.
    @Test(.timeLimit(.minutes(3)))
    func aNotificationMovedToAnotherDeviceLeavesNoRowBehind() async throws {
        let projector = makeProjector()
        let running = Task { try await projector.run() }
        let at = ProjectionFixtures.start
        var serial: UInt64 = 0
        func displayed(_ notification: String, device: String, category: String, rich: Bool, seconds: Int64) -> [AppendItem] {
            func event(_ offset: Int64, _ details: EventDetails) -> AppendItem {
                serial += 1
                return AppendItem(appID: "app-1", event: Event(
                    eventID: ProjectionFixtures.id(98, serial), notificationID: notification, deviceID: device, category: category,
                    occurredAt: at.adding(microseconds: (seconds + offset) * 1_000_000), details: details))
            }
            return [event(0, .displayed(DisplayedDetails(presentation: rich ? .rich : .plain, attachmentKind: rich ? .image : .noAttachment))),
                    event(3, .expanded)]
        }
        // d1 alone has breaking_news and chat_message; d3 keeps chat_message with new_photo.
        _ = try await store.append(displayed("n1", device: "d1", category: "breaking_news", rich: true, seconds: 100)
            + displayed("n2", device: "d1", category: "chat_message", rich: false, seconds: 100)
            + displayed("n3", device: "d3", category: "new_photo", rich: true, seconds: 100)
            + displayed("n4", device: "d3", category: "chat_message", rich: false, seconds: 100))
        try await waitUntilCaughtUp()
        let pairsSQL: SQL = "SELECT count(*)::int8 FROM engagement_device_pair_moments WHERE first_category = 'breaking_news' AND second_category = 'chat_message'"
        #expect(try await count("SELECT count(*)::int8 FROM engagement_devices WHERE device_id = 'd1'") == 2)
        #expect(try await count(pairsSQL) == 1)

        // An earlier event of n2 arrives: n2 was d2's, in promo_sale.
        serial += 1
        _ = try await store.append([AppendItem(appID: "app-1", event: Event(
            eventID: ProjectionFixtures.id(98, serial), notificationID: "n2", deviceID: "d2", category: "promo_sale",
            occurredAt: at.adding(microseconds: 10 * 1_000_000),
            details: .sent(SentDetails(media: [], strategy: .full, payloadBytes: 100))))])
        try await waitUntilCaughtUp()
        #expect(try await count("SELECT count(*)::int8 FROM engagement_devices WHERE device_id = 'd1'") == 1)
        #expect(try await count("SELECT count(*)::int8 FROM engagement_devices WHERE device_id = 'd2' AND category = 'promo_sale' AND plain_displayed = 1") == 1)
        #expect(try await count(pairsSQL) == 0)
        #expect(try await count("SELECT count(*)::int8 FROM engagement_device_pair_moments") == 1)
        #expect(try await count("SELECT plain_devices FROM engagement_device_moments WHERE category = 'chat_message'") == 1)

        try await expectARebuildEqualsTheModel(stopping: running)
    }

    /// A rebuild swaps new tables in at the live projector's own position when it is caught up,
    /// so the checkpoint does not move: the projector must still forget what it cached of the
    /// old tables (states, device rows, histograms), or its next batch writes stale rows over the
    /// rebuilt ones. The old device rows here are partial (the tables emptied, as just after the
    /// upgrade that added them, and the rebuild run to fill them), so a stale cache shows.
    @Test(.timeLimit(.minutes(3)))
    func aRebuildAtTheProjectorsOwnPositionReplacesWhatItCached() async throws {
        let at = ProjectionFixtures.start
        var serial: UInt64 = 0
        func displayed(_ notification: String, seconds: Int64) -> [AppendItem] {
            func event(_ offset: Int64, _ details: EventDetails) -> AppendItem {
                serial += 1
                return AppendItem(appID: "app-1", event: Event(
                    eventID: ProjectionFixtures.id(97, serial), notificationID: notification, deviceID: "d1", category: "breaking_news",
                    occurredAt: at.adding(microseconds: (seconds + offset) * 1_000_000), details: details))
            }
            return [event(0, .displayed(DisplayedDetails(presentation: .rich, attachmentKind: .image))), event(3, .expanded)]
        }
        func runProjector() -> Task<Void, any Error> {
            let projector = makeProjector()
            return Task { try await projector.run() }
        }
        let displayedSQL: SQL = "SELECT rich_displayed FROM engagement_devices WHERE device_id = 'd1'"
        var running = runProjector()
        _ = try await store.append(displayed("n1", seconds: 100) + displayed("n2", seconds: 200) + displayed("n3", seconds: 300))
        try await waitUntilCaughtUp()
        running.cancel()
        _ = try? await running.value
        _ = try await pool.withConnection { connection in
            try connection.execute("TRUNCATE engagement_devices, engagement_device_moments, engagement_device_pair_moments")
        }

        running = runProjector()
        _ = try await store.append(displayed("n4", seconds: 400))
        try await waitUntilCaughtUp()
        #expect(try await count(displayedSQL) == 1)
        try await EngagementRebuild(pool: pool).run()
        #expect(try await count(displayedSQL) == 4)
        _ = try await store.append(displayed("n5", seconds: 500))
        try await waitUntilCaughtUp()
        #expect(try await count(displayedSQL) == 5)
        let incremental = try await ReadModelSnapshot.rows(pool)
        running.cancel()
        _ = try? await running.value
        try await EngagementRebuild(pool: pool).run()
        #expect(try await ReadModelSnapshot.rows(pool) == incremental)
    }

    /// A database migrated from before 014 holds states in the JSON form: the projector reads
    /// them, counts a later event of their notification once, and writes the state back binary.
    @Test(.timeLimit(.minutes(2)))
    func statesStoredAsJSONBeforeMigration14AreReadAndRewrittenBinary() async throws {
        let at = ProjectionFixtures.start
        func event(_ n: UInt64, _ seconds: Int64, _ details: EventDetails) -> AppendItem {
            AppendItem(appID: "app-1", event: Event(eventID: ProjectionFixtures.id(98, n), notificationID: "old", deviceID: "d",
                                                    category: "new_photo", occurredAt: at.adding(microseconds: seconds * 1_000_000), details: details))
        }
        let first = [event(1, 0, .delivered(DeliveredDetails(attachment: DeliveredAttachment(kind: .image, format: .jpeg, bytes: 1_000,
                                                                                             source: .network, downloadMS: 120),
                                                             outcome: .attached, processingMS: 300, timeWillExpire: false))),
                     event(2, 1, .displayed(DisplayedDetails(presentation: .rich, attachmentKind: .image)))]
        _ = try await store.append(first)
        try await catchUpWithFreshProjector()
        let json = String(decoding: NotificationState(folding: first.map(\.event)).encodedJSON(), as: UTF8.self)
        _ = try await pool.withConnection { connection in
            try connection.execute("UPDATE notification_states SET state = convert_to(\(json), 'UTF8') WHERE notification_id = 'old'")
        }
        #expect(try await count("SELECT count(*) FROM notification_states WHERE get_byte(state, 0) = ascii('{')") == 1)

        _ = try await store.append([event(3, 5, .expanded)])
        try await catchUpWithFreshProjector()
        #expect(try await count("SELECT sum(notifications)::int8 FROM engagement_daily") == 1)
        #expect(try await count("SELECT sum(expanded)::int8 FROM engagement_daily WHERE presentation = 'rich'") == 1)
        #expect(try await count("SELECT sum(delivered)::int8 FROM extension_telemetry_daily") == 1)
        #expect(try await count("SELECT count(*) FROM notification_states WHERE get_byte(state, 0) = 1") == 1)
    }

    /// The projector adds histogram changes to the stored arrays itself: the same sums as
    /// `engage_add_counts`, which it did before and reports and dashboards still use, without the
    /// trailing zeros that function keeps (`HistogramTrimTests`).
    @Test func histogramSumsEqualEngageAddCounts() async throws {
        var random = SimulationRandom(seed: 19)
        for _ in 0..<200 {
            let stored = (0..<Int(random.next() % 6)).map { _ in Int64(random.next() % 7) - 2 }
            var buckets: [Int: Int64] = [:]
            for _ in 0..<Int(random.next() % 4) { buckets[Int(random.next() % 8)] = Int64(random.next() % 5) - 2 }
            let delta = EngagementStore.arrayLiteral(EngagementStore.adding(buckets, to: []))
            let mine = EngagementStore.arrayLiteral(EngagementStore.adding(buckets, to: stored))
            var theirs = try await pool.withConnection { connection in
                try connection.query("SELECT engage_add_counts(\(stored)::int8[], \(delta)::int8[])::text")[0].decode(0, as: String.self)
            }
            while theirs.hasSuffix(",0}") { theirs = String(theirs.dropLast(3)) + "}" }
            if theirs == "{0}" { theirs = "{}" }
            #expect(mine == theirs, "stored \(stored), changes \(buckets)")
            #expect(!mine.hasSuffix(",0}") && mine != "{0}")
        }
    }

    /// The same columns of `engagement_device_moments` and of `DeviceMomentStore`'s SQL.
    @Test func theDeviceMomentTablesHaveTheColumnsTheProjectorWrites() async throws {
        func columns(_ table: String) async throws -> [String] {
            try await pool.withConnection { connection in
                try connection.query("""
                    SELECT column_name::text FROM information_schema.columns
                    WHERE table_schema = current_schema() AND table_name = \(table) AND data_type = 'bigint'
                    ORDER BY ordinal_position
                    """).rows.map { try $0.decode(0, as: String.self) }
            }
        }
        #expect(try await columns("engagement_devices") == DeviceMomentStore.deviceColumns)
        #expect(try await columns("engagement_device_moments") == DeviceMomentStore.momentColumns.map(\.name))
        #expect(try await columns("engagement_device_pair_moments") == DevicePairMomentStore.columns.map(\.name))
    }

    /// Each device's displayed rich and plain notifications and their stages, folded from the log
    /// by plain SQL (one notification: one displayed event here), equal the read model's
    /// `engagement_devices`, and the moments computed from them equal `engagement_device_moments`
    /// and `engagement_device_pair_moments`.
    func expectDeviceMomentsEqualPlainSQLOverTheLog() async throws {
        let perDevice = """
            WITH n AS (
                SELECT app_id, notification_id, min(device_id) AS device_id, min(category) AS category,
                       min(payload->>'presentation') FILTER (WHERE type = 'displayed') AS presentation,
                       bool_or(type = 'expanded') AS expanded,
                       bool_or(type = 'action' AND payload->>'action_id' NOT IN
                               ('com.apple.UNNotificationDefaultActionIdentifier', 'com.apple.UNNotificationDismissActionIdentifier')) AS actioned,
                       bool_or(type = 'action' AND payload->>'action_id' = 'com.apple.UNNotificationDefaultActionIdentifier') AS opened,
                       bool_or(type = 'action' AND payload->>'action_id' = 'com.apple.UNNotificationDismissActionIdentifier') AS dismissed,
                       bool_or(type = 'action' AND payload ? 'text_input_length') AS replied
                FROM events GROUP BY app_id, notification_id
            )
            SELECT app_id, category, device_id,
                   count(*) FILTER (WHERE presentation = 'rich'),
                   count(*) FILTER (WHERE presentation = 'rich' AND expanded),
                   count(*) FILTER (WHERE presentation = 'rich' AND actioned),
                   count(*) FILTER (WHERE presentation = 'rich' AND opened),
                   count(*) FILTER (WHERE presentation = 'rich' AND dismissed),
                   count(*) FILTER (WHERE presentation = 'rich' AND replied),
                   count(*) FILTER (WHERE presentation = 'plain'),
                   count(*) FILTER (WHERE presentation = 'plain' AND expanded),
                   count(*) FILTER (WHERE presentation = 'plain' AND actioned),
                   count(*) FILTER (WHERE presentation = 'plain' AND opened),
                   count(*) FILTER (WHERE presentation = 'plain' AND dismissed),
                   count(*) FILTER (WHERE presentation = 'plain' AND replied)
            FROM n WHERE presentation IN ('rich', 'plain')
            GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            """
        let (fromLog, stored, moments, pairs, richDisplayedSquared) = try await pool.withConnection { connection in
            func lines(_ sql: SQL) throws -> [String] {
                try connection.query(sql).rows.map { row in
                    try ((0..<3).map { try row.decode($0, as: String.self) } + (3..<15).map { String(try row.decode($0, as: Int.self)) })
                        .joined(separator: " ")
                }
            }
            let fromLog = try lines(SQL(unsafeSQL: perDevice))
            let stored = try lines("""
                SELECT app_id, category, device_id, rich_displayed, rich_expanded, rich_actioned, rich_opened, rich_dismissed,
                       rich_replied, plain_displayed, plain_expanded, plain_actioned, plain_opened, plain_dismissed, plain_replied
                FROM engagement_devices ORDER BY 1, 2, 3
                """)
            let moments = try DeviceMomentStore.read(appID: nil, category: nil, on: connection)
            let pairs = try DevicePairMomentStore.read(appID: nil, on: connection)
            let columns = (3..<15).map { "c\($0)" }.joined(separator: ", ")
            let squares = try connection.query(SQL(unsafeSQL: "SELECT category, sum(c3 * c3)::int8 FROM ("
                + perDevice.replacingOccurrences(of: "ORDER BY 1, 2, 3", with: "")
                + ") d(app_id, category, device_id, \(columns)) GROUP BY 1 ORDER BY 1")).rows.map { try "\($0.decode(0, as: String.self)) \($0.decode(1, as: Int.self))" }
            return (fromLog, stored, moments, pairs, squares)
        }
        #expect(!fromLog.isEmpty)
        #expect(stored == fromLog)
        // The sums over devices, computed here from the per-device counts of the log.
        var devices: [String: [DeviceCategoryCounts]] = [:]
        var countsByDevice: [DeviceMomentFold.Key: DeviceCategoryCounts] = [:]
        for line in fromLog {
            let fields = line.split(separator: " ").map(String.init)
            let values = fields[3...].map { Int($0)! }
            let stages = [FunnelStage.displayed] + FunnelStage.engagements
            var counts = DeviceCategoryCounts()
            for (index, stage) in stages.enumerated() {
                counts.rich[stage] = values[index]
                counts.plain[stage] = values[stages.count + index]
            }
            devices[fields[0] + "/" + fields[1], default: []].append(counts)
            countsByDevice[DeviceMomentFold.Key(appID: fields[0], category: fields[1], deviceID: fields[2])] = counts
        }
        let expected = devices.keys.sorted().map { key in
            let parts = key.split(separator: "/").map(String.init)
            return CategoryDeviceMoments(appID: parts[0], category: parts[1], devices: devices[key]!)
        }
        #expect(moments == expected)
        // The sums across two categories, from the same per-device counts.
        #expect(!pairs.isEmpty, "devices with notifications in two categories")
        #expect(pairs == CategoryPairDeviceMoments.pairs(of: countsByDevice))
        #expect(moments.map { "\($0.category) \($0.rich[.expansion]!.trialsSquared)" } == richDisplayedSquared)

        // The report reads the pairs: its adjusted answer is the one built from the same devices'
        // counts with them, and not the one without.
        let at = Timestamp(microsecondsSinceEpoch: 0)
        let report = try await ReportQuery().run(on: pool, now: at)
        let rows = Dictionary(grouping: countsByDevice, by: { [$0.key.appID, $0.key.category] }).flatMap { key, devices in
            let total = devices.map(\.value).reduce(DeviceCategoryCounts(), +)
            return [(ObservedPresentation.rich, total.rich), (.plain, total.plain)].map { presentation, counts in
                EngagementRow(appID: key[0], category: key[1], presentation: presentation, attachmentKind: "none",
                              day: UTCDay(daysSinceEpoch: 0), counts: counts)
            }
        }
        func difference(_ report: EngagementReport) throws -> EffectEstimate {
            let summary = try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
            #expect(summary.unit == .device)
            return try #require(summary.riskDifference)
        }
        let read = try difference(report)
        let expectedDifference = try difference(EngagementReport.build(engagement: rows, devices: expected, devicePairs: pairs, generatedAt: at))
        let apart = try difference(EngagementReport.build(engagement: rows, devices: expected, generatedAt: at))
        #expect(abs(read.interval.lower - expectedDifference.interval.lower) < 1e-12)
        #expect(abs(read.interval.upper - expectedDifference.interval.upper) < 1e-12)
        #expect(abs(read.interval.lower - apart.interval.lower) > 1e-9)

        // Sums no set of devices has (an upgraded database before its rebuild) are left out: the
        // report still answers, with the notification as the unit, instead of failing.
        let spoiled = try #require(expected.first).category
        let spoil: (Int) async throws -> Void = { devices in
            _ = try await self.pool.withConnection { connection in
                try connection.execute("""
                    UPDATE engagement_device_moments SET rich_devices = rich_devices + \(devices) WHERE category = \(spoiled)
                    """)
            }
        }
        try await spoil(-1_000_000)
        let readSpoiled = try await pool.withConnection { connection in
            try DeviceMomentStore.read(appID: nil, category: nil, on: connection)
        }
        #expect(readSpoiled.map(\.category) == expected.map(\.category).filter { $0 != spoiled })
        let fallback = try await ReportQuery().run(on: pool, now: at)
        #expect(try #require(fallback.stratified.first { $0.metric == .engagement(.expansion) }).unit == .notification)
        try await spoil(1_000_000)
    }

    @Test(.timeLimit(.minutes(2)))
    func standbyTakesOverWhenTheActiveProjectorStops() async throws {
        let otherPool = ConnectionPool(configuration: pool.configuration, size: 3)
        let registryA = MetricsRegistry(), registryB = MetricsRegistry()
        var configuration = Projector.Configuration()
        configuration.pollInterval = .milliseconds(100)
        let first = Projector(pool: pool, configuration: configuration, logger: Logger(label: "a", sink: MemoryLogSink()),
                              metrics: ProjectorMetrics(registry: registryA))
        let second = Projector(pool: otherPool, configuration: configuration, logger: Logger(label: "b", sink: MemoryLogSink()),
                               metrics: ProjectorMetrics(registry: registryB))
        let runningFirst = Task { try await first.run() }
        // Start the second only once the first holds the lock (connecting can be slow on a busy machine).
        let activeA = ProjectorMetrics(registry: registryA).active
        try await pollUntil(every: .milliseconds(20)) { activeA.value == 1 }
        let runningSecond = Task { try await second.run() }
        _ = try await store.append(ProjectionFixtures.events(notifications: 50, seed: 3))
        try await waitUntilCaughtUp()
        // The second has asked for the lock and been refused: its session sits idle after the try.
        try await pollUntil(every: .milliseconds(20)) {
            try await count("""
                SELECT count(*)::int8 FROM pg_stat_activity
                WHERE datname = current_database() AND state = 'idle' AND query LIKE '%pg_try_advisory_lock%'
                """) >= 1
        }
        let metricsA = ProjectorMetrics(registry: registryA), metricsB = ProjectorMetrics(registry: registryB)
        #expect(metricsA.active.value == 1)
        #expect(metricsB.active.value == 0)
        #expect(metricsB.events.value == 0)

        runningFirst.cancel()
        _ = try? await runningFirst.value
        _ = try await store.append(ProjectionFixtures.events(notifications: 50, seed: 4))
        try await waitUntilCaughtUp()
        #expect(metricsB.active.value == 1)
        // The standby counts its batch just after committing it, so a reader of the checkpoint
        // can be a moment ahead of the counter: wait for it (the time limit catches a never).
        try await pollUntil(every: .milliseconds(5)) { metricsB.events.value > 0 }
        runningSecond.cancel()
        _ = try? await runningSecond.value
        await otherPool.close()
        #expect(try await count("SELECT sum(notifications)::int8 FROM engagement_daily") == 100)
    }
}
