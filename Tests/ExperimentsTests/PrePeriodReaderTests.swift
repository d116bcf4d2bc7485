import EngageCore
import EventStore
@testable import Experiments
import Postgres
import Testing
import TestSupport

@Suite("CUPED's pre-period read")
struct PrePeriodReaderTests {
    /// The read raises `work_mem` to what its grouping needs, and keeps a higher one an operator
    /// set: the setting inside the read's transaction, from a low and from a high session value.
    @Test func theReadRaisesWorkMemAndNeverLowersIt() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let settings = try await pool.withConnection { connection in
            try ["4MB", "1GB"].map { session in
                try connection.execute("SELECT set_config('work_mem', \(session), false)")
                return try connection.transaction { connection in
                    try PrePeriodReader.configureTransaction(on: connection)
                    return try connection.query("SELECT current_setting('work_mem') || ' ' || current_setting('jit')")[0]
                        .decode(0, as: String.self)
                }
            }
        }
        #expect(settings == ["256MB off", "1GB off"])
        await pool.close()
    }

    /// The rows are summed per device after their connection is back in the pool (so the replay's
    /// second lane can take it): results outlive their connection, and summing them later, after
    /// the pool has closed every connection, gives the covariates of reading and summing at once,
    /// a notification whose displays disagree (folded by the second statement) included.
    @Test func theRowsSummedAfterTheirConnectionClosedGiveTheSameCovariates() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let start = Fixtures.time("2026-03-01T00:00:00Z")
        try await Self.appendHistory(pool, notifications: 300, devices: 40, seed: 5, days: 1, before: start)
        _ = try await pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
                VALUES
                  (gen_random_uuid(), 'demo', 'd-1', 'delivered', 'new_photo', 'device-x', \(start.adding(microseconds: -10_000_000).postgres), '{"processing_ms": 5}'),
                  (gen_random_uuid(), 'demo', 'd-1', 'displayed', 'new_photo', 'device-x', \(start.adding(microseconds: -9_000_000).postgres), '{"presentation": "rich"}'),
                  (gen_random_uuid(), 'demo', 'd-1', 'displayed', 'new_photo', 'device-x', \(start.adding(microseconds: -8_000_000).postgres), '{"presentation": "plain"}')
                """)
        }
        let definition = ExperimentDefinition(
            id: "pre", appID: "demo",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.5)],
            primaryMetric: .open, startAt: start)
        let atOnce = try await pool.withConnection { connection in try #require(try PrePeriodReader.read(definition, on: connection)) }
        let rows = try await pool.withConnection { connection in try #require(try PrePeriodReader.rows(definition, on: connection)) }
        #expect(rows.folded?.rowCount == 1)
        await pool.close()
        let later = try rows.covariates()
        #expect(later == atOnce)
        #expect(later.devices > 30)
        #expect(later.trials(device: "device-x", .richDisplay) == (1, 1))
    }

    /// The covariates the query sums equal those of folding every notification of the window in
    /// event order, including notifications whose events disagree on the device, the category or
    /// the presentation (which the query folds by the sorting path) and events out of order or
    /// repeated (which the simulator sends).
    @Test func theCovariatesEqualTheFoldOfEveryNotificationInTheWindow() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let start = Fixtures.time("2026-03-01T00:00:00Z")
        try await Self.appendHistory(pool, notifications: 2_000, devices: 200, seed: 11, days: 3, before: start,
                                     options: SimulationOptions(outOfOrderFraction: 0.2, duplicateFraction: 0.1))
        // Disagreeing notifications: the first event in event order is never the least value.
        // d-1's first event is on device-z (later: device-a); d-2's first is category zz_first
        // (later: new_photo); d-3's first display is rich (later: plain); d-4 is like d-1 but
        // each event is opened or displayed so that every stage column is exercised; d-5 and d-6
        // are two notifications like d-3 on one device, folded to the same row in event order.
        _ = try await pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at, payload)
                VALUES
                  (gen_random_uuid(), 'demo', 'd-1', 'sent', 'new_photo', 'device-z', \(start.adding(microseconds: -9_000_000).postgres), '{}'),
                  (gen_random_uuid(), 'demo', 'd-1', 'displayed', 'new_photo', 'device-a', \(start.adding(microseconds: -8_000_000).postgres), '{"presentation": "rich"}'),
                  (gen_random_uuid(), 'demo', 'd-2', 'displayed', 'zz_first', 'device-b', \(start.adding(microseconds: -9_000_000).postgres), '{"presentation": "plain"}'),
                  (gen_random_uuid(), 'demo', 'd-2', 'expanded', 'new_photo', 'device-b', \(start.adding(microseconds: -8_000_000).postgres), '{}'),
                  (gen_random_uuid(), 'demo', 'd-3', 'delivered', 'new_photo', 'device-c', \(start.adding(microseconds: -9_000_000).postgres), '{"processing_ms": 5}'),
                  (gen_random_uuid(), 'demo', 'd-3', 'displayed', 'new_photo', 'device-c', \(start.adding(microseconds: -8_000_000).postgres), '{"presentation": "rich"}'),
                  (gen_random_uuid(), 'demo', 'd-3', 'displayed', 'new_photo', 'device-c', \(start.adding(microseconds: -7_000_000).postgres), '{"presentation": "plain"}'),
                  (gen_random_uuid(), 'demo', 'd-4', 'displayed', 'new_photo', 'device-z', \(start.adding(microseconds: -9_000_000).postgres), '{"presentation": "plain"}'),
                  (gen_random_uuid(), 'demo', 'd-4', 'action', 'new_photo', 'device-a', \(start.adding(microseconds: -8_000_000).postgres), \(#"{"action_id": "reply", "text_input_length": 3}"#)::jsonb),
                  (gen_random_uuid(), 'demo', 'd-4', 'action', 'new_photo', 'device-a', \(start.adding(microseconds: -7_000_000).postgres), \(#"{"action_id": "com.apple.UNNotificationDefaultActionIdentifier"}"#)::jsonb),
                  (gen_random_uuid(), 'demo', 'd-5', 'delivered', 'new_photo', 'device-d', \(start.adding(microseconds: -10_000_000).postgres), '{"processing_ms": 5}'),
                  (gen_random_uuid(), 'demo', 'd-5', 'displayed', 'new_photo', 'device-d', \(start.adding(microseconds: -9_000_000).postgres), '{"presentation": "rich"}'),
                  (gen_random_uuid(), 'demo', 'd-5', 'displayed', 'new_photo', 'device-d', \(start.adding(microseconds: -8_000_000).postgres), '{"presentation": "plain"}'),
                  (gen_random_uuid(), 'demo', 'd-6', 'delivered', 'new_photo', 'device-d', \(start.adding(microseconds: -10_000_000).postgres), '{"processing_ms": 5}'),
                  (gen_random_uuid(), 'demo', 'd-6', 'displayed', 'new_photo', 'device-d', \(start.adding(microseconds: -9_000_000).postgres), '{"presentation": "rich"}'),
                  (gen_random_uuid(), 'demo', 'd-6', 'displayed', 'new_photo', 'device-d', \(start.adding(microseconds: -8_000_000).postgres), '{"presentation": "plain"}')
                """)
        }
        let arm = ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true)
        for categories in [[String](), ["new_photo"]] {
            let definition = ExperimentDefinition(
                id: "pre", appID: "demo", categories: categories,
                arms: [arm, ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.5)],
                primaryMetric: .open, startAt: start)
            let covariates = try await pool.withConnection { connection in
                try #require(try PrePeriodReader.read(definition, on: connection))
            }
            let expected = try await Self.foldedWindow(definition, covariates, pool)
            #expect(covariates == expected, "categories \(categories): \(covariates.devices) against \(expected.devices) devices")
            #expect(covariates.devices > 150)
            // d-1 and d-4 count on device-z, their first event's device.
            #expect(covariates.trials(device: "device-z", .open) == (1, 2))
            #expect(covariates.trials(device: "device-a", .open) == (0, 0))
            #expect(covariates.trials(device: "device-c", .richDisplay).successes == 1) // d-3 was rich first
            #expect(covariates.trials(device: "device-d", .richDisplay) == (2, 2)) // d-5 and d-6, both rich first
        }
        await pool.close()
    }

    /// Every notification of the window folded by `ExperimentObservation.Fold` (which equals
    /// `NotificationState`'s fold, ExperimentObservationTests) from each event's columns and payload
    /// fields, its device, category and stages summed as the covariates sum them.
    static func foldedWindow(_ definition: ExperimentDefinition, _ window: ExperimentCovariates,
                             _ pool: ConnectionPool) async throws -> ExperimentCovariates {
        let rows = try await pool.withConnection { connection in
            try connection.query("""
                SELECT event_id, notification_id, type, category, device_id, occurred_at,
                       payload ->> 'presentation', payload ->> 'action_id', payload ? 'text_input_length'
                FROM events
                WHERE app_id = \(definition.appID) AND occurred_at >= \(window.from.postgres) AND occurred_at < \(window.to.postgres)
                """)
        }
        var folds: [String: ExperimentObservation.Fold] = [:]
        for row in rows.rows {
            let kind: ExperimentEventFacts.Kind
            switch try row.decode(2, as: String.self) {
            case "sent": kind = .sent
            case "delivered": kind = .delivered(processingMS: 0)
            case "displayed": kind = .displayed(try #require(Presentation(rawValue: try row.decode(6))))
            case "expanded": kind = .expanded
            case "action":
                let action: String = try row.decode(7)
                kind = .action(action == ActionDetails.openIdentifier ? .open : action == ActionDetails.dismissIdentifier ? .dismiss : .custom,
                               replied: try row.decode(8))
            default: continue
            }
            let facts = ExperimentEventFacts(eventID: try #require(EventID(bytes: try row.cell(0).uuidBytes())),
                                             occurredAt: Timestamp(microsecondsSinceEpoch: try row.cell(5).unixMicroseconds()),
                                             arm: nil, kind: kind)
            let origin: (String, String) = (try row.decode(3), try row.decode(4))
            folds[try row.decode(1), default: ExperimentObservation.Fold()].apply(facts) { origin }
        }
        var covariates = ExperimentCovariates(days: window.days, before: window.to)
        for fold in folds.values {
            guard let observation = fold.observation,
                  definition.categories.isEmpty || definition.categories.contains(observation.category) else { continue }
            covariates.add(device: observation.deviceID, reached: observation.stages)
        }
        return covariates
    }

    /// Simulated traffic without an experiment, starting `days` before `start`, appended as app `demo`.
    static func appendHistory(_ pool: ConnectionPool, notifications: Int, devices: Int, seed: UInt64, days: Int64,
                              before start: Timestamp, options: SimulationOptions = SimulationOptions()) async throws {
        var scenario = SimulationScenario.standard
        scenario.notificationCount = notifications
        scenario.deviceCount = devices
        scenario.experiment = nil
        var history = try TrafficSimulator(scenario: scenario, seed: seed, start: start.adding(microseconds: -days * 86_400_000_000),
                                           options: options)
        let store = EventStore(pool: pool)
        while let batch = history.next(batchSize: 2_000) {
            _ = try await store.append(batch.map { AppendItem(appID: "demo", event: $0) })
        }
    }
}
