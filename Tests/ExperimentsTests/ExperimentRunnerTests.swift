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
            #expect(arm.counts.notifications == expected.notifications, "\(arm.name)")
            #expect(arm.counts.displayed == expected.engagement.displayed, "\(arm.name)")
            #expect(arm.counts.expanded == expected.engagement.expanded, "\(arm.name)")
            #expect(arm.counts.opened == expected.engagement.opened, "\(arm.name)")
            #expect(arm.counts.dismissed == expected.engagement.dismissed, "\(arm.name)")
            #expect(arm.counts.replied == expected.engagement.replied, "\(arm.name)")
            #expect(arm.devices <= expected.devices && arm.devices > expected.devices * 9 / 10, "\(arm.name)")
        }
        #expect(outcome.result.arms.map(\.counts.notifications).reduce(0, +) == scenario.notificationCount)
        #expect(["continue", "ship", "stop_no_effect", "invalid_sample_ratio_mismatch"].contains(outcome.result.decision.code))
        #expect(!outcome.result.hasSampleRatioMismatch)
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
}
