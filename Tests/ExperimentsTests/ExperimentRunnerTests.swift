import Dispatch
import Foundation
import EngageCore
import EventStore
@testable import Experiments
import Postgres
import Testing
import TestSupport

@Suite("Experiment analysis over the log")
struct ExperimentRunnerTests {
    @Test func simulatedTrafficIsTalliedByTheArmsTheSimulatorAssigned() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let start = Fixtures.time("2026-03-01T00:00:00Z")
        let scenario = SimulationScenario.standard
        let simulated = try #require(scenario.experiment)
        var simulator = try TrafficSimulator(scenario: scenario, seed: 42, start: start)
        let store = EventStore(pool: pool)
        while let batch = simulator.next(batchSize: 5_000) {
            let result = try await store.append(batch.map { AppendItem(appID: "demo", event: $0) })
            #expect(result.duplicateCount == 0)
        }
        // Events of another app with the same tag must not count.
        var other = try TrafficSimulator(scenario: scenario, seed: 43, start: start)
        _ = try await store.append(try #require(other.next(batchSize: 500)).map { AppendItem(appID: "other-app", event: $0) })
        let truth = simulator.groundTruth

        let definition = ExperimentDefinition(
            id: simulated.id, appID: "demo",
            arms: simulated.arms.enumerated().map { index, arm in
                ExperimentArmDefinition(name: arm.name, strategy: arm.strategy, weight: arm.weight, isControl: index == 0)
            },
            hashSeed: simulated.seed, coverage: simulated.coverage, primaryMetric: .open,
            guardrails: [ExperimentGuardrail(.dismiss)])
        let runner = ExperimentRunner(pool: pool, chunkSize: 1_000)
        let outcome = try await runner.analyse(definition, previousRuns: 3, now: simulator.end)

        #expect(outcome.notifications == scenario.notificationCount)
        #expect(outcome.undecodable == 0)
        #expect(outcome.result.look == 4)
        #expect(outcome.result.excluded.otherExperiment == 0)
        #expect(outcome.result.excluded.unknownArm == 0)
        #expect(outcome.result.arms.map(\.name) == ["control", "treatment"])
        for arm in outcome.result.arms {
            let expected = try #require(truth.arms[arm.name])
            #expect(arm.strategy == expected.strategy)
            #expect(arm.counts[.notifications] == expected.notifications, "\(arm.name)")
            for stage in [.displayed] + FunnelStage.engagements {
                #expect(arm.counts[stage] == expected.engagement[stage], "\(arm.name) \(stage.name)")
            }
            #expect(arm.devices <= expected.devices && arm.devices > expected.devices * 9 / 10, "\(arm.name)")
        }
        #expect(outcome.result.arms.map { $0.counts[.notifications] }.reduce(0, +) == scenario.notificationCount)
        #expect(["continue", "ship", "stop_no_effect", "invalid_sample_ratio_mismatch"].contains(outcome.result.decision.code))
        #expect(!outcome.result.hasSampleRatioMismatch)
        await pool.close()
    }

    /// The analysis of simulated traffic (the path `engage experiment run` takes) against the
    /// same statistics recomputed from per-device sums that SQL takes straight from the log:
    /// `TreatmentEffect` on those sums, which equals gbstats 0.8.0's RatioStatistic and tests to
    /// 1e-9 (TreatmentEffectTests, ExperimentAnalysisTests.wiringMatchesGbstats).
    @Test func theResultEqualsTheStatisticsOfTheLogsPerDeviceSums() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let definition = try await Self.loggedExperiment(pool)
        let outcome = try await ExperimentRunner(pool: pool, chunkSize: 500).analyse(
            definition, previousRuns: 0, now: Fixtures.time("2026-03-02T00:00:00Z"))
        // Per notification: displayed (rich or plain), opened (the default action); per device:
        // n = notifications displayed, x = notifications opened. Rows of unknown types are not
        // events (the analysis skips them); the arm "nope" is not the experiment's.
        let open = ActionDetails.openIdentifier
        let sums = try await pool.withConnection { connection in
            try connection.query("""
                WITH notifications AS (
                    SELECT experiment_arm AS arm, device_id, notification_id,
                           bool_or(type = 'displayed' AND payload ->> 'presentation' IN ('rich', 'plain')) AS displayed,
                           bool_or(type = 'action' AND payload ->> 'action_id' = \(open)) AS opened
                    FROM events WHERE app_id = \(definition.appID) AND experiment_id = \(definition.id)
                      AND type IN ('sent', 'delivered', 'displayed', 'expanded', 'action')
                    GROUP BY 1, 2, 3),
                devices AS (
                    SELECT arm, device_id, count(*) FILTER (WHERE displayed)::float8 AS n,
                           count(*) FILTER (WHERE opened)::float8 AS x
                    FROM notifications GROUP BY 1, 2)
                SELECT arm, count(*)::float8, sum(x), sum(x * x), sum(n), sum(n * n), sum(x * n)
                FROM devices GROUP BY arm
                """)
        }
        var moments: [String: RatioMoments] = [:]
        for row in sums.rows {
            moments[try row.decode(0)] = RatioMoments(
                devices: Int(try row.decode(1, as: Double.self)), numeratorSum: try row.decode(2, as: Double.self),
                numeratorSquares: try row.decode(3, as: Double.self), denominatorSum: try row.decode(4, as: Double.self),
                denominatorSquares: try row.decode(5, as: Double.self), crossProducts: try row.decode(6, as: Double.self))
        }
        let control = ArmEstimate(try #require(moments["control"]))
        let treatment = ArmEstimate(try #require(moments["treatment"]))
        let primary = try #require(outcome.result.comparisons.first?.metrics.first)
        #expect(primary.metric == .open && primary.control.devices == control.devices && primary.variant.devices == treatment.devices)
        #expect(primary.control.successes == Int(try #require(moments["control"]).numeratorSum))
        #expect(primary.variant.trials == Int(try #require(moments["treatment"]).denominatorSum))
        let alpha = 1 - primary.confidence
        let tuning = definition.analysis.sequentialTuning
        for (scale, lift) in [(EffectScale.absolute, primary.absolute), (.relative, primary.relative)] {
            let lift = try #require(lift, "\(scale)")
            let effect = try TreatmentEffect(control: control, treatment: treatment, scale: scale)
            let fixed = effect.fixedHorizon(alpha: alpha)
            let sequential = effect.sequential(alpha: alpha, tuning: tuning)
            let posterior = effect.posterior(alpha: alpha)
            let pairs: [(Double, Double)] = [
                (lift.estimate, effect.estimate), (lift.standardError, effect.standardError),
                (lift.degreesOfFreedom, effect.degreesOfFreedom), (lift.fixedHorizon.pValue, fixed.pValue),
                (lift.fixedHorizon.interval.lower, fixed.interval.lower), (lift.fixedHorizon.interval.upper, fixed.interval.upper),
                (try #require(lift.sequential).pValue, sequential.pValue),
                (try #require(lift.sequential).interval.lower, sequential.interval.lower),
                (try #require(lift.sequential).interval.upper, sequential.interval.upper),
                (lift.chanceToWin, posterior.chanceToWin), (lift.credibleInterval.lower, posterior.credibleInterval.lower),
                (lift.credibleInterval.upper, posterior.credibleInterval.upper), (lift.controlRisk, posterior.controlRisk),
                (lift.treatmentRisk, posterior.treatmentRisk),
            ]
            for (index, (value, expected)) in pairs.enumerated() {
                #expect(abs(value - expected) <= 1e-12 * max(1, abs(expected)), "\(scale) figure \(index): \(value) vs \(expected)")
            }
        }
        await pool.close()
    }

    /// CUPED over the log: the same 300 devices (a persistent propensity) send notifications in
    /// the 10 days before the experiment and during it. The analysis with the 14-day pre-period
    /// narrows the sequential interval against the one with CUPED off, and equals the
    /// regression adjustment recomputed from per-device sums that SQL takes straight from the log.
    @Test func cupedNarrowsTheIntervalAndEqualsTheLogsPerDeviceSums() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let start = Fixtures.time("2026-03-01T00:00:00Z")
        var scenario = SimulationScenario.standard
        scenario.notificationCount = 6_000
        scenario.deviceCount = 300
        scenario.propensity = DevicePropensity(spread: 1.2)
        let simulated = try #require(scenario.experiment)
        var before = scenario
        before.experiment = nil
        let store = EventStore(pool: pool)
        var history = try TrafficSimulator(scenario: before, seed: 8, start: start.adding(microseconds: -10 * 86_400_000_000),
                                           options: SimulationOptions(propensitySeed: 7))
        var experiment = try TrafficSimulator(scenario: scenario, seed: 7, start: start)
        #expect(history.end < start)
        while let batch = history.next(batchSize: 5_000) {
            _ = try await store.append(batch.map { AppendItem(appID: "demo", event: $0) })
        }
        while let batch = experiment.next(batchSize: 5_000) {
            _ = try await store.append(batch.map { AppendItem(appID: "demo", event: $0) })
        }
        let definition = ExperimentDefinition(
            id: simulated.id, appID: "demo",
            arms: simulated.arms.enumerated().map { index, arm in
                ExperimentArmDefinition(name: arm.name, strategy: arm.strategy, weight: arm.weight, isControl: index == 0)
            },
            hashSeed: simulated.seed, primaryMetric: .open, startAt: start)
        #expect(definition.analysis.cupedPrePeriodDays == 14)
        var off = definition
        off.analysis.cupedPrePeriodDays = nil
        let runner = ExperimentRunner(pool: pool, chunkSize: 1_000)
        let adjusted = try await runner.analyse(definition, previousRuns: 0, now: experiment.end).result
        let plain = try await runner.analyse(off, previousRuns: 0, now: experiment.end).result
        #expect(plain.cupedWindow == nil && plain.comparisons[0].metrics[0].cuped == nil)
        let window = try #require(adjusted.cupedWindow)
        #expect(window.to == start && window.days == 14 && window.devicesWithHistory > 250)

        let withCuped = try #require(adjusted.comparisons.first?.metrics.first)
        let without = try #require(plain.comparisons.first?.metrics.first)
        let narrow = try #require(withCuped.logRatio?.sequential?.interval)
        let wide = try #require(without.logRatio?.sequential?.interval)
        let cuped = try #require(withCuped.cuped)
        let reduction = try #require(cuped.varianceReduction)
        #expect(reduction > 0.1, "variance reduction \(reduction)")
        #expect(narrow.upper - narrow.lower < wide.upper - wide.lower)
        // Same devices, same counts: only the adjustment differs.
        #expect(withCuped.control == without.control && withCuped.variant == without.variant)

        // Per device: x, n (opened, displayed) during the experiment by arm, x', n' in the window.
        let open = ActionDetails.openIdentifier
        let sums = try await pool.withConnection { connection in
            try connection.query("""
                WITH notifications AS (
                    SELECT notification_id, min(device_id) AS device_id, min(experiment_arm) AS arm,
                           bool_or(type = 'displayed') AS displayed,
                           bool_or(type = 'action' AND payload ->> 'action_id' = \(open)) AS opened
                    FROM events WHERE app_id = 'demo'
                      AND type IN ('sent', 'delivered', 'displayed', 'expanded', 'action')
                      AND (experiment_id = \(definition.id)
                           OR (experiment_id IS NULL AND occurred_at >= \(window.from.postgres)
                               AND occurred_at < \(window.to.postgres)))
                    GROUP BY notification_id),
                during AS (
                    SELECT arm, device_id, count(*) FILTER (WHERE displayed)::float8 AS n,
                           count(*) FILTER (WHERE displayed AND opened)::float8 AS x
                    FROM notifications WHERE arm IS NOT NULL GROUP BY 1, 2),
                history AS (
                    SELECT device_id, count(*) FILTER (WHERE displayed)::float8 AS n,
                           count(*) FILTER (WHERE displayed AND opened)::float8 AS x
                    FROM notifications WHERE arm IS NULL GROUP BY 1),
                devices AS (
                    SELECT d.arm, d.x, d.n, coalesce(h.x, 0) AS xp, coalesce(h.n, 0) AS np
                    FROM during d LEFT JOIN history h USING (device_id))
                SELECT arm, count(*)::float8, sum(x), sum(x * x), sum(n), sum(n * n), sum(x * n),
                       sum(xp), sum(xp * xp), sum(np), sum(np * np), sum(xp * np),
                       sum(x * xp), sum(x * np), sum(n * xp), sum(n * np)
                FROM devices GROUP BY arm
                """)
        }
        var moments: [String: AdjustedRatioMoments] = [:]
        for row in sums.rows {
            let v = try (1...15).map { try row.decode($0, as: Double.self) }
            let devices = Int(v[0])
            moments[try row.decode(0)] = AdjustedRatioMoments(
                post: RatioMoments(devices: devices, numeratorSum: v[1], numeratorSquares: v[2], denominatorSum: v[3],
                                   denominatorSquares: v[4], crossProducts: v[5]),
                pre: RatioMoments(devices: devices, numeratorSum: v[6], numeratorSquares: v[7], denominatorSum: v[8],
                                  denominatorSquares: v[9], crossProducts: v[10]),
                numeratorTimesPreNumerator: v[11], numeratorTimesPreDenominator: v[12],
                denominatorTimesPreNumerator: v[13], denominatorTimesPreDenominator: v[14])
        }
        let adjustment = RegressionAdjustment(control: try #require(moments["control"]),
                                              treatment: try #require(moments["treatment"]))
        #expect(adjustment.control.devices == withCuped.control.devices)
        let close = { (value: Double, expected: Double) in abs(value - expected) <= 1e-12 * max(1, abs(expected)) }
        #expect(close(cuped.theta, adjustment.theta), "theta \(cuped.theta) vs \(adjustment.theta)")
        let alpha = 1 - withCuped.confidence
        let tuning = definition.analysis.sequentialTuning
        let logRatio = try TreatmentEffect(control: adjustment.control, treatment: adjustment.treatment, scale: .logRatio)
        let unadjusted = try TreatmentEffect(control: adjustment.unadjustedControl, treatment: adjustment.unadjustedTreatment,
                                             scale: .logRatio)
        let lift = try #require(withCuped.logRatio)
        let sequential = logRatio.sequential(alpha: alpha, tuning: tuning)
        #expect(close(lift.logEstimate, logRatio.estimate) && close(lift.logStandardError, logRatio.standardError))
        #expect(close(log1p(narrow.lower), sequential.interval.lower) && close(log1p(narrow.upper), sequential.interval.upper))
        #expect(close(reduction, 1 - logRatio.variance / unadjusted.variance))
        #expect(close(without.logRatio?.logStandardError ?? .nan, unadjusted.standardError))
        let relative = try TreatmentEffect(control: adjustment.control, treatment: adjustment.treatment, scale: .relative)
        #expect(close(try #require(withCuped.relative).estimate, relative.estimate))
        #expect(close(try #require(withCuped.relative).standardError, relative.standardError))
        await pool.close()
    }

    @Test func anExperimentWithoutEventsAnalysesToContinue() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let outcome = try await ExperimentRunner(pool: pool).analyse(try Fixtures.definition(), previousRuns: 0,
                                                                    now: Fixtures.time("2026-03-01T00:00:00Z"))
        #expect(outcome.events == 0)
        #expect(outcome.result.decision == .continue)
        #expect(outcome.result.look == 1)
        await pool.close()
    }

    // MARK: The replay's shortcuts against the full decoder

    /// A log of 3,000 simulated notifications, some events out of order and repeated, plus rows no
    /// client could have sent: an unknown type, and an arm the experiment does not have.
    static func loggedExperiment(_ pool: ConnectionPool) async throws -> ExperimentDefinition {
        var scenario = SimulationScenario.standard
        scenario.notificationCount = 3_000
        scenario.deviceCount = 300
        let simulated = try #require(scenario.experiment)
        var simulator = try TrafficSimulator(scenario: scenario, seed: 7, start: Fixtures.time("2026-03-01T00:00:00Z"),
                                             options: SimulationOptions(outOfOrderFraction: 0.2, duplicateFraction: 0.1))
        let store = EventStore(pool: pool)
        while let batch = simulator.next(batchSize: 2_000) {
            _ = try await store.append(batch.map { AppendItem(appID: "demo", event: $0) })
        }
        _ = try await pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO events (event_id, app_id, notification_id, type, category, device_id, occurred_at,
                                    experiment_id, experiment_arm, payload)
                SELECT gen_random_uuid(), 'demo', 'sim-7-1', 'bogus', 'new_photo', 'device-1', now(), \(simulated.id), 'control',
                       jsonb_build_object('experiment', jsonb_build_object('id', \(simulated.id)::text, 'arm', 'control'))
                UNION ALL
                SELECT gen_random_uuid(), 'demo', 'extra-1', 'expanded', 'new_photo', 'device-1', now(), \(simulated.id), 'nope',
                       jsonb_build_object('experiment', jsonb_build_object('id', \(simulated.id)::text, 'arm', 'nope'))
                """)
        }
        return ExperimentDefinition(
            id: simulated.id, appID: "demo",
            arms: simulated.arms.enumerated().map { index, arm in
                ExperimentArmDefinition(name: arm.name, strategy: arm.strategy, weight: arm.weight, isControl: index == 0)
            },
            hashSeed: simulated.seed, primaryMetric: .open)
    }

    /// The replay as it was before reading only the needed fields: every payload decoded in full,
    /// every notification folded into a `NotificationState`.
    static func fullyDecodedReplay(_ definition: ExperimentDefinition, _ pool: ConnectionPool) async throws
        -> (tallies: ExperimentTallies, events: Int, notifications: Int, undecodable: Int)
    {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                SELECT event_id, notification_id, type, category, device_id, occurred_at, payload FROM events
                WHERE app_id = \(definition.appID) AND experiment_id = \(definition.id)
                """)
            var states: [String: NotificationState] = [:]
            var undecodable = 0
            for row in rows.rows {
                let notificationID: String = try row.decode(1)
                guard let type = EventType(rawValue: try row.decode(2)),
                      let event = try? Event(eventID: EventID(bytes: try row.cell(0).uuidBytes())!, type: type,
                                             notificationID: notificationID, deviceID: try row.decode(4),
                                             category: try row.decode(3),
                                             occurredAt: Timestamp(microsecondsSinceEpoch: try row.cell(5).unixMicroseconds()),
                                             payloadJSON: try row.cell(6).utf8Bytes()) else {
                    undecodable += 1
                    continue
                }
                states[notificationID, default: NotificationState()].apply(event)
            }
            var tallies = ExperimentTallies(definition: definition)
            for state in states.values { tallies.add(state) }
            return (tallies, rows.rowCount, states.count, undecodable)
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func theReplayReadingOnlyTheNeededFieldsEqualsTheFullDecoderInOneOrSeveralRanges() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 3)
        let definition = try await Self.loggedExperiment(pool)
        let reference = try await Self.fullyDecodedReplay(definition, pool)
        #expect(reference.undecodable == 1)
        #expect(reference.tallies.unknownArm == 1)

        for (lanes, chunkSize) in [(1, 5_000), (1, 7), (2, 1_000), (3, 333)] {
            let outcome = try await ExperimentRunner(pool: pool, chunkSize: chunkSize, lanes: lanes)
                .analyse(definition, previousRuns: 0, now: Fixtures.time("2026-03-03T00:00:00Z"))
            #expect(outcome.tallies == reference.tallies, "\(lanes) lane(s)")
            #expect(outcome.events == reference.events)
            #expect(outcome.notifications == reference.notifications)
            #expect(outcome.undecodable == reference.undecodable)
            // One range on one connection; with more, the split gives each lane several.
            #expect(lanes == 1 ? outcome.ranges == 1 : outcome.ranges == lanes * SplitReplay.rangesPerLane, "\(lanes) lane(s)")
        }
        await pool.close()
    }

    @Test(.timeLimit(.minutes(2)))
    func aSplitReplayFinishesAloneWhenThePoolHasNoConnectionForTheOtherLane() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let definition = try await Self.loggedExperiment(pool)
        let reference = try await Self.fullyDecodedReplay(definition, pool)
        // Another user holds one of the two connections until the analysis is over.
        let release = DispatchSemaphore(value: 0)
        let holder = Task { try await pool.withConnection { _ in release.wait() } }
        while pool.statistics.inUse == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let outcome = try await ExperimentRunner(pool: pool, chunkSize: 500, lanes: 2)
            .analyse(definition, previousRuns: 0, now: Fixtures.time("2026-03-03T00:00:00Z"))
        release.signal()
        try await holder.value
        #expect(outcome.tallies == reference.tallies)
        #expect(outcome.ranges == 2 * SplitReplay.rangesPerLane)
        await pool.close()
    }
}
