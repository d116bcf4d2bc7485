import Foundation

/// The text `engage experiment show` prints: the definition in a few lines, the latest decision
/// and the lifecycle as the log tells it.
public struct ExperimentSummaryText: Sendable {
    /// One lifecycle entry: what happened, when, and why when a reason was logged.
    public struct LifecycleLine: Sendable, Equatable {
        public var action: String
        public var at: Timestamp
        public var reason: String?

        public init(action: String, at: Timestamp, reason: String?) {
            self.action = action
            self.at = at
            self.reason = reason
        }

        /// Reads the reason out of a logged lifecycle payload (`{"action", "reason", ...}`).
        public init(action: String, at: Timestamp, payload: [UInt8]) {
            var reason: String?
            if let json = try? JSON.parse(payload), let node = json.member(json.root, "reason") {
                reason = json.string(node)
            }
            self.init(action: action, at: at, reason: reason)
        }
    }

    /// The latest finished analysis.
    public struct LatestRun: Sendable, Equatable {
        public var runID: Int64
        public var scheduledFor: Timestamp
        public var decision: String
        public var rationale: String?
        /// "treatment open 23.1%": CUPED's variance reduction on the log ratio per arm and
        /// metric, empty when the run had no covariate.
        public var varianceReductions: [String]

        public init(runID: Int64, scheduledFor: Timestamp, decision: String, rationale: String?,
                    varianceReductions: [String] = []) {
            self.runID = runID
            self.scheduledFor = scheduledFor
            self.decision = decision
            self.rationale = rationale
            self.varianceReductions = varianceReductions
        }

        /// Reads the decision's arm and rationale out of a stored result (`ExperimentRunResult.canonicalJSON`).
        public init(runID: Int64, scheduledFor: Timestamp, decisionCode: String, result: [UInt8]?) {
            var decision = decisionCode
            var rationale: String?
            if let result, let json = try? JSON.parse(result), let node = json.member(json.root, "decision") {
                if let arm = json.member(node, "arm").flatMap(json.string) { decision += " " + arm }
                if let reason = json.member(node, "reason").flatMap(json.string) { decision += " (" + reason + ")" }
                rationale = json.member(node, "rationale").flatMap(json.string)
            }
            var reductions: [String] = []
            if let result, let json = try? JSON.parse(result), let arms = json.member(json.root, "intent_to_treat") {
                for arm in json.elements(arms) {
                    let name = json.member(arm, "arm").flatMap(json.string) ?? "?"
                    guard let metrics = json.member(arm, "metrics") else { continue }
                    for metric in json.elements(metrics) {
                        guard let cuped = json.member(metric, "cuped"),
                              let reduction = json.member(cuped, "variance_reduction").flatMap(json.double) else { continue }
                        let metricName = json.member(metric, "metric").flatMap(json.string) ?? "?"
                        reductions.append("\(name) \(metricName) \(ExperimentSummaryText.percent(reduction, digits: 1))")
                    }
                }
            }
            self.init(runID: runID, scheduledFor: scheduledFor, decision: decision, rationale: rationale,
                      varianceReductions: reductions)
        }
    }

    public var definition: ExperimentDefinition
    public var latestRun: LatestRun?
    public var lifecycle: [LifecycleLine]

    public init(definition: ExperimentDefinition, latestRun: LatestRun?, lifecycle: [LifecycleLine]) {
        self.definition = definition
        self.latestRun = latestRun
        self.lifecycle = lifecycle
    }

    public func render() -> String {
        let d = definition
        var lines: [String] = []
        lines.append("experiment \(d.id) (app \(d.appID)): \(d.status.rawValue)")
        let arms = d.arms.map { arm in
            "\(arm.name) = \(arm.strategy.rawValue) \(Self.percent(arm.weight))" + (arm.isControl ? " (control)" : "")
        }
        lines.append("  arms:        " + arms.joined(separator: ", "))
        lines.append("  categories:  " + (d.categories.isEmpty ? "all" : d.categories.joined(separator: ", ")))
        let guardrails = d.guardrails.map { "\($0.metric.rawValue) \($0.direction.rawValue)" }
        lines.append("  metric:      \(d.primaryMetric.rawValue); guardrails: "
            + (guardrails.isEmpty ? "none" : guardrails.joined(separator: ", ")) + "; alpha \(d.alpha)")
        lines.append("  schedule:    \(d.schedule.expression) (UTC); start \(d.startAt?.rfc3339 ?? "-"); stop \(d.stopAt?.rfc3339 ?? "-")")
        lines.append("  cuped:       " + (d.analysis.cupedPrePeriodDays.map { "pre-period \($0) days before start" } ?? "off"))
        if let run = latestRun {
            lines.append("  latest run:  \(run.runID), scheduled for \(run.scheduledFor.rfc3339): \(run.decision)")
            if let rationale = run.rationale { lines.append("               " + rationale) }
            if !run.varianceReductions.isEmpty {
                lines.append("  CUPED:       variance reduction " + run.varianceReductions.joined(separator: ", "))
            }
        } else {
            lines.append("  latest run:  none yet")
        }
        lines.append("  lifecycle (from the event log):")
        for entry in lifecycle {
            lines.append("    \(entry.at.rfc3339)  \(entry.action)" + (entry.reason.map { ": " + $0 } ?? ""))
        }
        return lines.joined(separator: "\n")
    }

    /// `0.2314` as "23.1%".
    static func percent(_ fraction: Double, digits: Int) -> String {
        let scale = pow(10, Double(digits))
        return "\((fraction * 100 * scale).rounded() / scale)%"
    }

    static func percent(_ weight: Double) -> String {
        let value = weight * 100
        return value == value.rounded() ? "\(Int(value))%" : "\(value)%"
    }
}
