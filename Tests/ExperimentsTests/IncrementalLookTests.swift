import Synchronization
import EngageCore
import EventStore
@testable import Experiments
import Postgres
import Testing
import TestSupport

@Suite("Incremental experiment looks")
struct IncrementalLookTests {
    /// A look reads without a transaction id (an advisory lock, not a row lock, and every write
    /// last): while it reads, the oldest running transaction is not the look's, so the projector
    /// and its lag, bounded by that, do not wait for a long fold. Checked on a first look, a look
    /// after new events and a look that refolds because the stored tallies are stale.
    @Test(.timeLimit(.minutes(3)))
    func aLookHoldsNoTransactionIDWhileItReads() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let definition = try await ExperimentRunnerTests.loggedExperiment(pool)
        let reads = Mutex<[Bool]>([])
        let check: @Sendable (Connection) throws -> Void = { connection in
            let unassigned: Bool = try connection.query("SELECT pg_current_xact_id_if_assigned() IS NULL")[0].decode(0)
            reads.withLock { $0.append(unassigned) }
        }
        try await TestPostgres.waitForEarlierTransactions(pool)
        _ = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500, afterReading: check)
        try await Self.appendLateEvents(definition.id) { sql in
            _ = try await pool.withConnection { connection in try connection.execute(sql) }
        }
        try await TestPostgres.waitForEarlierTransactions(pool)
        _ = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500, afterReading: check)
        _ = try await pool.withConnection { connection in
            try connection.execute("UPDATE experiment_tally_checkpoints SET definition_key = 'stale' WHERE experiment_id = \(definition.id)")
        }
        try await TestPostgres.waitForEarlierTransactions(pool)
        let refolded = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500, afterReading: check)
        #expect(reads.withLock { $0 } == [true, true, true])
        let replay = try await ExperimentRunner(pool: pool, chunkSize: 1_000, lanes: 1).replay(definition)
        #expect(refolded.tallies == replay.tallies && refolded.events == replay.events)
    }

    /// Tallies folded below a transaction the database has not assigned yet (a log moved with
    /// pg_dump into a new cluster, whose counter starts low) would make every later look fold
    /// nothing and answer the stored tallies forever: the look raises the exact error instead,
    /// before writing anything, and the checkpoint stays as it was.
    @Test(.timeLimit(.minutes(3)))
    func aLookFoldedBelowATransactionTheDatabaseHasNotReachedRaises() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let definition = try await ExperimentRunnerTests.loggedExperiment(pool)
        try await TestPostgres.waitForEarlierTransactions(pool)
        _ = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
        // As the restored checkpoint of a cluster a million transactions ahead of this one.
        let ahead: UInt64 = try await pool.withConnection { connection in
            try connection.query("""
                UPDATE experiment_tally_checkpoints
                SET folded_below = ((pg_snapshot_xmax(pg_current_snapshot())::text::numeric + 1000000)::text)::xid8
                WHERE experiment_id = \(definition.id)
                RETURNING folded_below
                """)[0].decode(0)
        }
        do {
            _ = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
            Issue.record("a look folded below a transaction the database has not assigned returned tallies")
        } catch let error as TransactionIDsBehindLog {
            // The database's next id moves with other tests' transactions on the shared server.
            #expect(error.holder == .experimentLook && error.held == ahead - 1 && error.next <= error.held)
        }
        let stored: UInt64 = try await pool.withConnection { connection in
            try connection.query("SELECT folded_below FROM experiment_tally_checkpoints WHERE experiment_id = \(definition.id)")[0].decode(0)
        }
        #expect(stored == ahead)
    }

    /// A reset of every experiment waits for a fold under way, even an experiment's first one
    /// (no checkpoint row yet): the fold commits first and its tallies are dropped with the rest.
    /// The fold, once it has read everything, waits until the reset waits for a lock (or, were
    /// the reset not to wait, has finished).
    @Test(.timeLimit(.minutes(3)))
    func aResetOfEveryExperimentWaitsForAFirstFoldUnderWay() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let definition = try await ExperimentRunnerTests.loggedExperiment(pool)
        let resetDone = Mutex(false)
        let waitForTheReset: @Sendable (Connection) throws -> Void = { connection in
            while !resetDone.withLock({ $0 }) {
                let waiting: Bool = try connection.query("""
                    SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                                   WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database())
                    """)[0].decode(0)
                if waiting { return }
                try connection.execute("SELECT pg_sleep(0.01)")
            }
        }
        try await TestPostgres.waitForEarlierTransactions(pool)
        async let looked = ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500, afterReading: waitForTheReset)
        // The reset starts once the look holds a lock (its checkpoint row does not exist yet).
        while try await Fixtures.count(pool, """
            SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
            WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()
            """) == 0 {
            try await Task.sleep(for: .milliseconds(10))
        }
        let dropped = try await ExperimentTallyStore.reset(pool: pool)
        resetDone.withLock { $0 = true }
        _ = try await looked
        #expect(dropped == 1)
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_tally_checkpoints") == 0)
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_device_tallies") == 0)
        await pool.close()
    }

    /// The tallies kept between looks equal a full replay of the log at every look: after new
    /// notifications, after late events for notifications already tallied (an expansion or an open
    /// after the display, an earlier event that moves the notification to another device and arm,
    /// an earlier rich display, an earlier delivery with another processing time, an undecodable
    /// row), and after a fold that failed after writing, before its commit.
    @Test(.timeLimit(.minutes(3)))
    func everyLookEqualsTheFullReplayEvenWhenLateEventsChangeTalliedNotifications() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let definition = try await ExperimentRunnerTests.loggedExperiment(pool)
        let runner = ExperimentRunner(pool: pool, chunkSize: 1_000, lanes: 1)
        func expectReplayed(_ look: ExperimentReplay, _ label: String) async throws {
            let replay = try await runner.replay(definition)
            #expect(look.tallies == replay.tallies, "\(label): tallies")
            #expect(look.events == replay.events, "\(label): \(look.events) events against \(replay.events)")
            #expect(look.notifications == replay.notifications, "\(label): notifications")
            #expect(look.undecodable == replay.undecodable, "\(label): undecodable")
        }
        func execute(_ sql: SQL) async throws {
            _ = try await pool.withConnection { connection in try connection.execute(sql) }
        }
        try await TestPostgres.waitForEarlierTransactions(pool)
        let first = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
        try await expectReplayed(first, "first look")
        #expect(first.notifications > 2_900 && first.tallies.unknownArm == 1 && first.undecodable == 1)
        #expect(first.eventsRead == first.events)
        try await TestPostgres.waitForEarlierTransactions(pool)
        let again = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
        #expect(again.tallies == first.tallies && again.events == first.events)
        // What engage_scheduler_events_replayed_total counts: only the events a look folds.
        #expect(again.eventsRead == 0)

        // New notifications (copies of 200 under other ids), and late events for tallied ones.
        let id = definition.id
        try await execute("""
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                experiment_id, experiment_arm, payload)
            SELECT gen_random_uuid(), app_id, 'copy-' || notification_id, type, category, device_id,
                   occurred_at + interval '1 day', experiment_id, experiment_arm, payload
            FROM events
            WHERE experiment_id = \(id) AND notification_id IN (
                SELECT DISTINCT notification_id FROM events WHERE experiment_id = \(id) ORDER BY 1 LIMIT 200)
            """)
        try await Self.appendLateEvents(id, execute)
        try await TestPostgres.waitForEarlierTransactions(pool)
        let second = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
        try await expectReplayed(second, "after late events")
        #expect(second.eventsRead == second.events - first.events)
        #expect(second.notifications == first.notifications + 200)
        #expect(second.undecodable > first.undecodable)
        #expect(second.tallies != first.tallies)

        // A fold that fails before its commit leaves tallies and checkpoint as they were.
        try await execute("""
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                experiment_id, experiment_arm, payload)
            SELECT gen_random_uuid(), 'demo', notification_id, 'expanded', min(category), min(device_id),
                   max(occurred_at) + interval '2 minutes', \(id), min(experiment_arm), '{}'
            FROM events WHERE experiment_id = \(id) AND notification_id LIKE '%1'
            GROUP BY notification_id
            """)
        let before = try await Self.storedRows(id, pool)
        struct Crash: Error {}
        try await TestPostgres.waitForEarlierTransactions(pool)
        await #expect(throws: Crash.self) { _ = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500, beforeCommit: { throw Crash() }) }
        #expect(try await Self.storedRows(id, pool) == before)
        try await TestPostgres.waitForEarlierTransactions(pool)
        let third = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
        try await expectReplayed(third, "after a failed fold")
        #expect(try await Self.storedRows(id, pool) != before)

        // The look's analysis is the replay's.
        let now = Fixtures.time("2026-03-03T00:00:00Z")
        try await TestPostgres.waitForEarlierTransactions(pool)
        let looked = try await runner.look(definition, previousRuns: 2, now: now)
        let replayed = try await runner.analyse(definition, previousRuns: 2, now: now)
        #expect(looked.result == replayed.result)
        #expect(looked.tallies == replayed.tallies)

        // Another definition of the experiment (a category filter) refolds from the start.
        var filtered = definition
        filtered.categories = ["new_photo"]
        try await TestPostgres.waitForEarlierTransactions(pool)
        let refolded = try await ExperimentTallyStore.look(filtered, pool: pool, chunkSize: 500)
        #expect(refolded.tallies == (try await runner.replay(filtered)).tallies)
        await pool.close()
    }

    /// Late events for notifications of the experiment already tallied, chosen by their ids.
    static func appendLateEvents(_ id: String, _ execute: (SQL) async throws -> Void) async throws {
        let columns = """
            INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                experiment_id, experiment_arm, payload)
            """
        // An expansion and an open after the display (notifications ending in 3); a rich display
        // and a delivery before the earlier events (ending in 5): presentation and processing
        // time change.
        try await execute("""
            \(unsafeSQL: columns)
            SELECT gen_random_uuid(), 'demo', notification_id, kind, min(category), min(device_id),
                   CASE WHEN late THEN max(occurred_at) + interval '1 minute' ELSE min(occurred_at) - interval '30 seconds' END,
                   \(id), min(experiment_arm), body::jsonb
            FROM events JOIN (VALUES
                    ('%3', true, 'expanded', '{}'),
                    ('%3', true, 'action', '{"action_id": "com.apple.UNNotificationDefaultActionIdentifier"}'),
                    ('%5', false, 'displayed', '{"presentation": "rich"}'),
                    ('%5', false, 'delivered', '{"processing_ms": 4321}')) AS extra(ending, late, kind, body)
                 ON notification_id LIKE ending
            WHERE experiment_id = \(id) AND notification_id LIKE 'sim-%'
            GROUP BY notification_id, late, kind, body
            """)
        // An event before all others, from another device and with the other arm: the notification
        // moves to that device and arm.
        try await execute("""
            \(unsafeSQL: columns)
            SELECT gen_random_uuid(), 'demo', notification_id, 'sent', min(category), 'moved-' || notification_id,
                   min(occurred_at) - interval '1 minute', \(id),
                   CASE min(experiment_arm) WHEN 'control' THEN 'treatment' ELSE 'control' END, '{}'
            FROM events
            WHERE experiment_id = \(id) AND notification_id LIKE 'sim-%' AND notification_id LIKE '%7'
            GROUP BY notification_id
            """)
        // A row no client could send, for a tallied notification.
        try await execute("""
            \(unsafeSQL: columns)
            SELECT gen_random_uuid(), 'demo', min(notification_id), 'bogus', 'new_photo', 'device-1', now(), \(id),
                   'control', '{}'
            FROM events WHERE experiment_id = \(id) AND notification_id LIKE 'sim-%'
            """)
    }

    /// The stored tallies and checkpoint of experiment `id`, as text.
    static func storedRows(_ id: String, _ pool: ConnectionPool) async throws -> [String] {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT format('%s %s %s %s', folded_below, events, notifications, undecodable)
                FROM experiment_tally_checkpoints WHERE experiment_id = \(id)
                UNION ALL
                (SELECT format('%s %s %s', tally, device_id, counts) FROM experiment_device_tallies
                 WHERE experiment_id = \(id) ORDER BY tally, device_id)
                UNION ALL
                (SELECT format('%s %s', tally, counts) FROM experiment_tally_histograms
                 WHERE experiment_id = \(id) ORDER BY tally)
                """).rows.map { try $0.decode(0) }
        }
    }
}

@Suite("Scheduled incremental looks")
struct ScheduledIncrementalLookTests {
    /// Schedulers with `incrementalLooks` keep the experiment's tallies: after every due run the
    /// stored tallies hold what a replay of the log finds, however the runs fell to the two.
    @Test(.timeLimit(.minutes(3)))
    func schedulersWithIncrementalLooksKeepTheTalliesAReplayFinds() async throws {
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        var definition = try await ExperimentRunnerTests.loggedExperiment(pool)
        definition.schedule = try CronSchedule("* * * * *")
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let store = ExperimentStore(pool: pool)
        _ = try await store.create(definition)
        definition = try await store.start(definition.id, now: start).definition
        let clock = ManualTime(wallClock: start)
        let schedulers = ["scheduler-a", "scheduler-b"].map { owner in
            Fixtures.scheduler(database, clock: clock, owner: owner) { $0.incrementalLooks = true }
        }
        let runner = ExperimentRunner(pool: pool, chunkSize: 1_000, lanes: 1)
        for tick in 1...3 {
            try await TestPostgres.waitForEarlierTransactions(pool)
            clock.advance(seconds: 60)
            async let byA = schedulers[0].tick()
            async let byB = schedulers[1].tick()
            #expect(try await byA + byB == 1)
            let replay = try await runner.replay(definition)
            // What the scheduler's look folded, then the tallies it left.
            #expect(try await Fixtures.count(pool, """
                SELECT notifications FROM experiment_tally_checkpoints WHERE experiment_id = \(definition.id)
                """) == replay.notifications, "tick \(tick)")
            try await TestPostgres.waitForEarlierTransactions(pool)
            let kept = try await ExperimentTallyStore.look(definition, pool: pool)
            #expect(kept.tallies == replay.tallies && kept.notifications == replay.notifications, "tick \(tick)")
            try await IncrementalLookTests.appendLateEvents(definition.id) { sql in
                _ = try await pool.withConnection { connection in try connection.execute(sql) }
            }
        }
        for scheduler in schedulers { await scheduler.pool.close() }
        await pool.close()
    }
}
