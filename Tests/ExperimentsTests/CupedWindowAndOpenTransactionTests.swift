import Dispatch
import EngageCore
import EventStore
@testable import Experiments
import Postgres
import Synchronization
import Testing
import TestSupport

/// Events that no simulation makes: an experiment's own events dated before its start by a device
/// clock behind, and an older transaction still open while a look folds.
@Suite("CUPED's window and looks beside open transactions")
struct CupedWindowAndOpenTransactionTests {
    /// An event tagged with the experiment whose `occurred_at` lies before `start_at` (a device
    /// clock a minute behind, for a notification sent just after the start) counts in the
    /// experiment (the replay reads every event tagged with it, whatever its time) and must not
    /// also count in CUPED's pre-period covariate of its device: the treatment would leak into it.
    @Test(.timeLimit(.minutes(3)))
    func anExperimentEventBeforeStartAtIsNotAlsoACovariate() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let start = Fixtures.time("2026-03-01T00:00:00Z")
        let definition = ExperimentDefinition(
            id: "skew", appID: "demo",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.5)],
            primaryMetric: .open, startAt: start)
        _ = try await pool.withConnection { connection in
            // Sent by the server 5 s after the start; the device's clock is a minute behind.
            try connection.execute("""
                INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                    experiment_id, experiment_arm, payload)
                VALUES
                  (gen_random_uuid(), 'demo', 'n-skew', 'sent', 'new_photo', 'device-skew', \(start.adding(microseconds: 5_000_000).postgres), 'skew', 'thumbnail', '{}'),
                  (gen_random_uuid(), 'demo', 'n-skew', 'delivered', 'new_photo', 'device-skew', \(start.adding(microseconds: -55_000_000).postgres), 'skew', 'thumbnail', '{"processing_ms": 5}'),
                  (gen_random_uuid(), 'demo', 'n-skew', 'displayed', 'new_photo', 'device-skew', \(start.adding(microseconds: -54_000_000).postgres), 'skew', 'thumbnail', '{"presentation": "rich"}'),
                  (gen_random_uuid(), 'demo', 'n-skew', 'action', 'new_photo', 'device-skew', \(start.adding(microseconds: -50_000_000).postgres), 'skew', 'thumbnail', '{"action_id": "com.apple.UNNotificationDefaultActionIdentifier"}')
                """)
        }
        let replay = try await ExperimentRunner(pool: pool, chunkSize: 100, lanes: 1).replay(definition)
        // The experiment counts the notification, opened, on device-skew.
        let thumbnail = try #require(replay.tallies.arm(named: "thumbnail"))
        #expect(thumbnail.proportion(.open) == (1, 1))
        let covariates = try await pool.withConnection { connection in try #require(try PrePeriodReader.read(definition, on: connection)) }
        // device-skew had no notification before the experiment: its covariate must be 0, not the
        // experiment's own open.
        #expect(covariates.trials(device: "device-skew", .open) == (0, 0))
        #expect(covariates.devices == 0)
        await pool.close()
    }

    /// A look while an older transaction that appends a late event is still open, and a newer one
    /// has committed events: the look folds neither (its bound is the open transaction), and once
    /// the open one commits, the next look equals the full replay (nothing lost, nothing twice).
    @Test(.timeLimit(.minutes(3)))
    func aLookBesideAnOpenOlderTransactionLosesNothingOnceItCommits() async throws {
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let holder = ConnectionPool(configuration: database, size: 1)
        let definition = try await ExperimentRunnerTests.loggedExperiment(pool)
        let id = definition.id
        let runner = ExperimentRunner(pool: pool, chunkSize: 1_000, lanes: 1)
        try await TestPostgres.waitForEarlierTransactions(pool)
        _ = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)

        // The older transaction: a late expansion (and an earlier event from another device and
        // arm) for tallied notifications, kept open until told.
        let inserted = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        async let held: Void = holder.withConnection(interruptingOnCancel: false) { connection in
            defer { inserted.signal() }
            try connection.transaction { connection in
                try connection.execute("""
                    INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                        experiment_id, experiment_arm, payload)
                    SELECT gen_random_uuid(), 'demo', notification_id, 'expanded', min(category), min(device_id),
                           max(occurred_at) + interval '1 minute', \(id), min(experiment_arm), '{}'::jsonb
                    FROM events WHERE experiment_id = \(id) AND notification_id LIKE 'sim-%2'
                    GROUP BY notification_id
                    UNION ALL
                    SELECT gen_random_uuid(), 'demo', notification_id, 'sent', min(category), 'moved-' || notification_id,
                           min(occurred_at) - interval '1 minute', \(id),
                           CASE min(experiment_arm) WHEN 'control' THEN 'treatment' ELSE 'control' END, '{}'::jsonb
                    FROM events WHERE experiment_id = \(id) AND notification_id LIKE 'sim-%4'
                    GROUP BY notification_id
                    """)
                inserted.signal()
                release.wait()
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { inserted.wait(); continuation.resume() }
        }
        // A newer transaction commits: new notifications and late events of the same kind.
        _ = try await pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                    experiment_id, experiment_arm, payload)
                SELECT gen_random_uuid(), app_id, 'copy-' || notification_id, type, category, device_id,
                       occurred_at + interval '1 day', experiment_id, experiment_arm, payload
                FROM events
                WHERE experiment_id = \(id) AND notification_id IN (
                    SELECT DISTINCT notification_id FROM events WHERE experiment_id = \(id) ORDER BY 1 LIMIT 100)
                UNION ALL
                SELECT gen_random_uuid(), 'demo', notification_id, 'action', min(category), min(device_id),
                       max(occurred_at) + interval '2 minutes', \(id), min(experiment_arm),
                       '{"action_id": "com.apple.UNNotificationDefaultActionIdentifier"}'
                FROM events WHERE experiment_id = \(id) AND notification_id LIKE 'sim-%2'
                GROUP BY notification_id
                """)
        }
        // Looks while the older transaction is open (their bound is its id).
        let during = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
        let duringAgain = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
        #expect(during.tallies == duringAgain.tallies)
        release.signal()
        try await held
        try await TestPostgres.waitForEarlierTransactions(pool)
        let after = try await ExperimentTallyStore.look(definition, pool: pool, chunkSize: 500)
        let replay = try await runner.replay(definition)
        #expect(after.tallies == replay.tallies)
        #expect(after.events == replay.events)
        #expect(after.notifications == replay.notifications)
        await holder.close()
        await pool.close()
    }
}
