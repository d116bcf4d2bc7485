import EngageCore
import EventStore
import Experiments
import Postgres
import Runtime
import TestSupport
import Testing

/// The experiments behind the experiments dashboard: the simulated traffic's own experiment,
/// analysed by the real scheduler while the traffic arrives, so that its runs form a series of
/// looks; a second experiment of the app with a run left overdue; and one of the other app.
extension DashboardQueryTests {
    /// Started before the traffic and analysed as it arrives; its last run, at `stop_at`, ends it.
    static let experimentID = "strategy-full-vs-adaptive"
    /// Starts after the traffic; its first run is enqueued but no scheduler claims it.
    static let idleExperimentID = "thumbnail-vs-none"
    /// The other app's, a draft: `$experiment` of `app` must not offer it.
    static let otherAppExperimentID = "other-app-poster"

    /// What a test failpoint throws: the error a failed run keeps.
    struct InjectedFailure: Error, CustomStringConvertible {
        var description: String { "injected analysis failure" }
    }

    /// Fails each analysis after it ran, where a scheduler records the error and retries.
    static let failAfterAnalysis: @Sendable (String) throws -> Void = { point in
        if point == "scheduler.after-analysis" { throw InjectedFailure() }
    }

    /// The simulated experiment as the app would define it: the simulator's arms, seed and
    /// coverage, judged by the open rate with two guardrails, analysed hourly until `stopAt`.
    static func definition(of simulator: TrafficSimulator, app: String) throws -> ExperimentDefinition {
        let simulated = try #require(simulator.scenario.experiment)
        #expect(simulated.id == experimentID)
        return ExperimentDefinition(
            id: simulated.id, appID: app,
            arms: simulated.arms.enumerated().map { index, arm in
                ExperimentArmDefinition(name: arm.name, strategy: arm.strategy, weight: arm.weight, isControl: index == 0)
            },
            hashSeed: simulated.seed, coverage: simulated.coverage, primaryMetric: .open,
            guardrails: [ExperimentGuardrail(.dismiss), ExperimentGuardrail(.richDisplay)],
            schedule: try CronSchedule("0 * * * *"), startAt: simulator.start, stopAt: simulator.end)
    }

    /// A scheduler whose clock stands at `time`.
    static func scheduler(_ pool: ConnectionPool, at time: Timestamp,
                          configure: (inout Scheduler.Configuration) -> Void = { _ in }) -> Scheduler {
        var configuration = Scheduler.Configuration()
        configuration.ownerID = "dashboard-test"
        configure(&configuration)
        return Scheduler(pool: pool, configuration: configuration, time: ManualTime(wallClock: time),
                         logger: Logger(label: "test", sink: MemoryLogSink()))
    }

    /// Appends `app`'s simulated traffic in batches while its experiment runs, the scheduler's
    /// clock following the traffic: after each batch the scheduler analyses what is due. One run
    /// fails once and succeeds on its second attempt, one fails for good, one is asked for by
    /// hand, and the last, at `stop_at`, stops the experiment. Returns the simulated truth.
    static func appendAnalysing(_ simulator: inout TrafficSimulator, app: String, to store: EventStore,
                                pool: ConnectionPool) async throws -> SimulationGroundTruth {
        let experiments = ExperimentStore(pool: pool)
        _ = try await experiments.create(try definition(of: simulator, app: app))
        _ = try await experiments.start(experimentID)
        let idleStart = simulator.end.adding(microseconds: 3_600 * Timestamp.microsecondsPerSecond)
        _ = try await experiments.create(ExperimentDefinition(
            id: idleExperimentID, appID: app,
            arms: [ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "none", strategy: .noAttachment, weight: 0.5)],
            primaryMetric: .expansion, schedule: try CronSchedule("0 * * * *"), startAt: idleStart))
        _ = try await experiments.start(idleExperimentID)
        _ = try await experiments.create(ExperimentDefinition(
            id: otherAppExperimentID, appID: otherApp,
            arms: [ExperimentArmDefinition(name: "thumbnail", strategy: .thumbnail, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.5)],
            primaryMetric: .expansion))

        var latest = simulator.start
        var batchNumber = 0
        while let batch = simulator.next(batchSize: 1_500) {
            _ = try await store.append(batch.map { AppendItem(appID: app, event: $0) })
            latest = max(latest, batch.map(\.occurredAt).max() ?? latest)
            batchNumber += 1
            switch batchNumber {
            case 2:
                // The first attempt fails and gives the run back; the next tick's attempt stores it.
                let flaky = scheduler(pool, at: latest) { $0.failpoint = failAfterAnalysis }
                try await flaky.enqueueDue()
                let claim = try #require(try await flaky.claimNext(), "a run is due after batch \(batchNumber)")
                #expect(try await flaky.execute(claim) == false)
                try await scheduler(pool, at: latest).tick()
            case 3:
                try await scheduler(pool, at: latest) {
                    $0.maxAttempts = 1
                    $0.failpoint = failAfterAnalysis
                }.tick()
            case 4:
                _ = try await scheduler(pool, at: latest).runNow(experimentID: experimentID, app: app)
            default:
                try await scheduler(pool, at: latest).tick()
            }
        }
        // The run at stop_at ends the experiment; an hour after the idle one's start its first
        // run is enqueued, and stays pending.
        try await scheduler(pool, at: simulator.end).tick()
        try await scheduler(pool, at: idleStart.adding(microseconds: 3_600 * Timestamp.microsecondsPerSecond)).enqueueDue()
        return simulator.groundTruth
    }
}
