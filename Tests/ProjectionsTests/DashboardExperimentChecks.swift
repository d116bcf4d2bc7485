import EngageCore
import Experiments
import Foundation
import Postgres
import Testing

/// The experiments dashboard against what the experiments actually hold: the simulator's truth
/// per arm, a fresh replay by `ExperimentRunner`, and the runs as `ExperimentStore` reads them.
extension DashboardQueryTests {
    /// The runs of `app`'s experiments with their stored results decoded.
    struct StoredRuns {
        var runs: [ExperimentRun]
        var results: [Int64: [String: Any]]

        /// The experiment's finished runs, in schedule order.
        func done(_ experimentID: String) -> [ExperimentRun] {
            runs.filter { $0.experimentID == experimentID && $0.status == .done }.sorted { $0.scheduledFor < $1.scheduledFor }
        }
    }

    static func storedRuns(_ pool: ConnectionPool, experiments: [String]) async throws -> StoredRuns {
        var stored = StoredRuns(runs: [], results: [:])
        for id in experiments {
            for run in try await ExperimentStore(pool: pool).runs(id) {
                stored.runs.append(run)
                if let bytes = run.result {
                    stored.results[run.id] = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
                }
            }
        }
        return stored
    }

    /// The value at a path of object keys and array indexes in decoded JSON.
    static func json(_ root: Any?, _ path: Any...) -> Any? {
        var node = root
        for step in path {
            if let key = step as? String { node = (node as? [String: Any])?[key] } else if let index = step as? Int {
                node = (node as? [Any]).flatMap { index < $0.count ? $0[index] : nil }
            }
        }
        return node
    }

    static func seconds(_ time: Timestamp) -> Double { Double(time.microsecondsSinceEpoch) / 1_000_000 }

    static func same(_ a: Double?, _ b: Double?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return abs(a - b) <= 1e-12 * max(1, abs(b))
    }

    static func sameTime(_ value: Value, _ time: Timestamp?) -> Bool {
        guard let date = value.time, let time else { return value == .null && time == nil }
        return abs(date.timeIntervalSince1970 - seconds(time)) < 1e-5
    }

    /// Checks the panels of `engage-experiments` that have a truth to compare with.
    static func checkExperimentTruth(_ result: Result, of query: PanelQuery, population: Population, pool: ConnectionPool,
                                     context: String) async throws {
        guard query.dashboard == "engage-experiments" else { return }
        let stored = try await storedRuns(pool, experiments: population.experiments)
        let done = stored.done(experimentID)
        switch query.title {
        case "Experiments of $app":
            let records = try await ExperimentStore(pool: pool).list(app: app).records
            #expect(result.values("experiment").compactMap(\.text) == records.map(\.id), "\(context): the app's experiments, newest first")
            for (row, record) in zip(result.rows, records) {
                let runs = stored.done(record.id)
                #expect(number(row, result, "looks") == Double(runs.count), "\(context) \(record.id) looks")
                #expect(row[result.column("status")!].text == record.status.rawValue, "\(context) \(record.id) status")
                #expect(row[result.column("latest_decision")!].text == runs.last?.decision, "\(context) \(record.id) latest decision")
            }
        case "Lifecycle of $experiment (event log)":
            let lifecycle = try await ExperimentStore(pool: pool).history(experimentID).filter { $0.action != .analysed }
            #expect(result.values("action").compactMap(\.text) == lifecycle.map(\.action.rawValue), "\(context) actions in log order")
            #expect(result.values("status").compactMap(\.text) == ["draft", "running", "stopped"], "\(context) status after each")
        case "Arms of $experiment in its latest analysis":
            // A fresh replay of the log sees what the last run saw: no event arrived since.
            let definition = try #require(try await ExperimentStore(pool: pool).get(experimentID)).definition
            let replay = try await ExperimentRunner(pool: pool).analyse(definition, previousRuns: 0, now: Timestamp(microsecondsSinceEpoch: Timestamp.nowMicros()))
            let arms = replay.result.arms
            #expect(result.values("arm").compactMap(\.text) == arms.map(\.name), "\(context): the arms in definition order")
            for (row, arm) in zip(result.rows, arms) {
                let simulated = population.truth.arms[arm.name]
                let primary = replay.result.comparisons.first { arm.isControl || $0.arm == arm.name }?.metrics.first
                let rate = arm.isControl ? primary?.control : primary?.variant
                let cell = "\(context) \(arm.name)"
                #expect(number(row, result, "devices") == Double(arm.devices), "\(cell) devices")
                #expect(number(row, result, "notifications") == simulated.map { Double($0.notifications) }, "\(cell) notifications")
                #expect(number(row, result, "displayed") == simulated.map { Double($0.engagement[.displayed]) }, "\(cell) displayed")
                #expect(number(row, result, "successes") == simulated.map { Double($0.engagement[.opened]) }, "\(cell) opened")
                #expect(number(row, result, "trials") == rate.map { Double($0.trials) }, "\(cell) trials")
                #expect(same(number(row, result, "primary_rate"), rate?.rate), "\(cell) open rate")
            }
        case "Primary and guardrail metrics in the latest analysis":
            let latest = try #require(done.last.flatMap { stored.results[$0.id] })
            let metrics = json(latest, "intent_to_treat", 0, "metrics") as? [[String: Any]] ?? []
            #expect(result.values("metric").compactMap(\.text) == metrics.compactMap { $0["metric"] as? String }, "\(context) metrics")
            #expect(result.values("metric").compactMap(\.text) == ["open", "dismiss", "rich_display"], "\(context): primary, then guardrails")
            for (row, metric) in zip(result.rows, metrics) {
                #expect(same(number(row, result, "lift"), json(metric, "relative", "estimate") as? Double), "\(context) lift")
                #expect(same(number(row, result, "sequential_lower"), json(metric, "relative", "sequential", "lower") as? Double),
                        "\(context) sequential lower")
                #expect(same(number(row, result, "decision_sequential_p_value"), json(metric, "log_ratio", "sequential", "p_value") as? Double),
                        "\(context) the decision's p-value")
                let violated = metric["guardrail_violated"] as? Bool ?? false
                let untestedAndWorse = metric["guardrail_untested_and_worse"] as? Bool ?? false
                let untestable = metric["unavailable"] is String
                let expected = metric["role"] as? String == "guardrail"
                    ? (violated ? "violated" : untestedAndWorse ? "worse, untestable" : untestable ? "untestable" : "ok") : nil
                #expect(row[result.column("guardrail")!].text == expected, "\(context) guardrail state")
            }
        case "Relative lift of the primary metric per look: sequential and fixed intervals":
            #expect(result.rows.count == done.count, "\(context): a point per finished run (one treatment)")
            for (row, run) in zip(result.rows, done) {
                let metric = json(stored.results[run.id], "intent_to_treat", 0, "metrics", 0)
                #expect(sameTime(row[0], run.scheduledFor), "\(context) run \(run.id) time")
                // The sequential interval is the one decisions read: the log ratio's.
                for (column, path) in [("lift", ["relative", "estimate"]), ("sequential_lower", ["log_ratio", "sequential", "lower"]),
                                       ("sequential_upper", ["log_ratio", "sequential", "upper"]),
                                       ("fixed_lower", ["relative", "fixed", "lower"]), ("fixed_upper", ["relative", "fixed", "upper"])] {
                    let expected = path.reduce(metric) { json($0, $1) } as? Double
                    #expect(same(number(row, result, column), expected), "\(context) run \(run.id) \(column)")
                }
                // Always valid at every look costs width: the sequential interval holds the fixed one.
                #expect((number(row, result, "sequential_lower") ?? 0) <= (number(row, result, "fixed_lower") ?? 0)
                        && (number(row, result, "sequential_upper") ?? 0) >= (number(row, result, "fixed_upper") ?? 0),
                        "\(context) run \(run.id): sequential wider than fixed")
            }
        case "Sequential p-value of the primary metric per look":
            #expect(result.rows.count == done.count, "\(context): a point per finished run (one treatment)")
            for (row, run) in zip(result.rows, done) {
                let stored = stored.results[run.id]
                #expect(same(number(row, result, "sequential_p_value"),
                             json(stored, "intent_to_treat", 0, "metrics", 0, "log_ratio", "sequential", "p_value") as? Double),
                        "\(context) run \(run.id)")
                #expect(same(number(row, result, "alpha"), json(stored, "alpha") as? Double), "\(context) alpha")
            }
        case "Sample ratio mismatch p-value per look":
            #expect(result.rows.count == done.count, "\(context): a point per finished run")
            for (row, run) in zip(result.rows, done) {
                #expect(sameTime(row[0], run.scheduledFor), "\(context) run \(run.id) time")
                #expect(same(number(row, result, "srm_p_value"), json(stored.results[run.id], "sample_ratio_mismatch", "p_value") as? Double),
                        "\(context) run \(run.id)")
                #expect(number(row, result, "srm_threshold") == ExperimentAnalysis.sampleRatioMismatchThreshold, "\(context) threshold")
            }
        case "Decisions of $experiment (event log)":
            // Every finished run is logged once with its decision; newest first.
            let finished = done.sorted { ($0.finishedAt ?? $0.scheduledFor) > ($1.finishedAt ?? $1.scheduledFor) }
            #expect(result.values("run_id").compactMap(\.number) == finished.map { Double($0.id) }, "\(context) runs")
            for (row, run) in zip(result.rows, finished) {
                let decision = json(stored.results[run.id], "decision")
                let cell = "\(context) run \(run.id)"
                #expect(row[result.column("decision")!].text == run.decision, "\(cell) decision")
                #expect(row[result.column("arm")!].text == json(decision, "arm") as? String, "\(cell) arm")
                #expect(row[result.column("rationale")!].text == json(decision, "rationale") as? String, "\(cell) rationale")
                #expect(sameTime(row[result.column("scheduled_for")!], run.scheduledFor), "\(cell) scheduled for")
                #expect(row[result.column("trigger")!].text == (run.isManual ? "manual" : "scheduled"), "\(cell) trigger")
                #expect(number(row, result, "look") == json(stored.results[run.id], "look") as? Double, "\(cell) look")
            }
            #expect(result.values("trigger").contains(.text("manual")), "\(context): the manual run is logged")
        case "Analysis runs by status (scheduled in the range)":
            for status in ExperimentRun.Status.allCases {
                let row = rows(result, where: "status", is: status.rawValue).first
                #expect(row.flatMap { number($0, result, "runs") } == Double(stored.runs.filter { $0.status == status }.count),
                        "\(context) \(status.rawValue)")
            }
        case "Analysis runs needing attention":
            let overdue = Timestamp(microsecondsSinceEpoch: Timestamp.nowMicros()).adding(microseconds: -300 * Timestamp.microsecondsPerSecond)
            let expected = stored.runs.filter {
                $0.status == .failed || $0.attempts > 1 || ($0.status == .pending && $0.scheduledFor < overdue)
            }
            #expect(Set(result.values("run_id").compactMap(\.number)) == Set(expected.map { Double($0.id) }), "\(context) runs")
            #expect(Set(result.values("problem").compactMap(\.text)) == ["failed", "retried", "overdue"], "\(context) each kind shown")
            let failed = rows(result, where: "problem", is: "failed").first
            #expect(failed?[result.column("error")!].text == InjectedFailure().description, "\(context): the failure's error")
        default:
            break
        }
    }
}
