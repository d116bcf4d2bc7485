import EngageCore

/// One finished analysis of an experiment, read back from the result it stored
/// (`ExperimentRunResult.canonicalJSON`, as `engage experiment run` prints it): the decision, the
/// sample ratio check, the arms and every comparison with its intervals.
public struct ExperimentLook: Sendable, Equatable {
    public struct Test: Sendable, Equatable {
        public var lower: Double
        public var upper: Double
        public var pValue: Double
    }

    public struct Lift: Sendable, Equatable {
        public var estimate: Double
        public var standardError: Double
        public var fixed: Test?
        public var sequential: Test?
        public var chanceToWin: Double?
    }

    public struct Rate: Sendable, Equatable {
        public var successes: Int
        public var trials: Int
        public var devices: Int
        public var rate: Double?
    }

    /// One metric of one treatment arm against the control.
    public struct Comparison: Sendable, Equatable {
        public var arm: String
        public var metric: String
        /// `primary`, `guardrail` or `observational`.
        public var role: String
        public var direction: String?
        /// The level of its intervals: `1 - alpha`, or `1 - alpha / treatments` for the primary
        /// metric with several treatments.
        public var confidence: Double?
        public var control: Rate
        public var variant: Rate
        public var absolute: Lift?
        public var relative: Lift?
        /// The relative lift read from the log ratio of means: what decisions use.
        public var logRatio: Lift?
        /// How the p-values were adjusted for several treatments ("none", "bonferroni x2").
        public var pValueCorrection: String?
        public var unavailable: String?
        public var guardrailViolated: Bool
        /// A guardrail no test could read, on its forbidden side: it blocks as a violated one does.
        public var guardrailUntestedAndWorse: Bool
        /// CUPED's variance reduction of the decision's log ratio; nil without CUPED.
        public var varianceReduction: Double?
    }

    public struct Arm: Sendable, Equatable {
        public var name: String
        public var strategy: String
        public var isControl: Bool
        public var weight: Double
        public var devices: Int
        public var notifications: Int
        public var delivered: Int
        public var displayed: Int
        public var richDisplayed: Int
    }

    public var runID: Int64
    public var scheduledFor: Timestamp
    public var look: Int
    public var analyzedAt: String
    public var primaryMetric: String
    public var decision: String
    public var decisionArm: String?
    public var decisionReason: String?
    public var rationale: String
    public var sampleRatioPValue: Double?
    public var sampleRatioThreshold: Double?
    public var sampleRatioMismatch: Bool
    public var arms: [Arm]
    public var comparisons: [Comparison]

    /// The decision as `engage experiment show` prints it: `ship treatment`, `stop_no_effect (equivalence)`.
    public var decisionText: String {
        decision + (decisionArm.map { " " + $0 } ?? "") + (decisionReason.map { " (" + $0 + ")" } ?? "")
    }

    /// The comparison of `metric` for `arm`, if the analysis made one.
    public func comparison(arm: String, metric: String) -> Comparison? {
        comparisons.first { $0.arm == arm && $0.metric == metric }
    }

    /// Nil when `result` is not a stored analysis this page can read.
    public init?(runID: Int64, scheduledFor: Timestamp, result: [UInt8]) {
        guard let json = try? JSON.parse(result, maxDepth: 16) else { return nil }
        let reader = Reader(json: json)
        let root = json.root
        guard let look = reader.int(root, "look"), let decision = json.member(root, "decision"),
              let code = reader.string(decision, "code") else { return nil }
        self.runID = runID
        self.scheduledFor = scheduledFor
        self.look = look
        analyzedAt = reader.string(root, "analyzed_at") ?? ""
        primaryMetric = reader.string(root, "primary_metric") ?? ""
        self.decision = code
        decisionArm = reader.string(decision, "arm")
        decisionReason = reader.string(decision, "reason")
        rationale = reader.string(decision, "rationale") ?? ""
        let ratio = json.member(root, "sample_ratio_mismatch")
        sampleRatioPValue = ratio.flatMap { reader.double($0, "p_value") }
        sampleRatioThreshold = ratio.flatMap { reader.double($0, "threshold") }
        sampleRatioMismatch = ratio.flatMap { json.member($0, "mismatch") }.flatMap(json.bool) ?? false
        arms = reader.elements(root, "arms").map { arm in
            let counts = json.member(arm, "counts")
            return Arm(name: reader.string(arm, "name") ?? "", strategy: reader.string(arm, "strategy") ?? "",
                       isControl: json.member(arm, "control").flatMap(json.bool) ?? false,
                       weight: reader.double(arm, "weight") ?? 0, devices: reader.int(arm, "devices") ?? 0,
                       notifications: counts.flatMap { reader.int($0, "notifications") } ?? 0,
                       delivered: counts.flatMap { reader.int($0, "delivered") } ?? 0,
                       displayed: counts.flatMap { reader.int($0, "displayed") } ?? 0,
                       richDisplayed: counts.flatMap { reader.int($0, "rich_displayed") } ?? 0)
        }
        comparisons = reader.elements(root, "intent_to_treat").flatMap { entry in
            let arm = reader.string(entry, "arm") ?? ""
            return reader.elements(entry, "metrics").map { reader.comparison($0, arm: arm) }
        }
    }

    /// Typed reads of the members of a parsed document; absent or mistyped members are nil.
    private struct Reader {
        let json: JSON

        func member(_ node: JSON.Node, _ key: StaticString) -> JSON.Node? {
            guard let found = json.member(node, key), !json.isNull(found) else { return nil }
            return found
        }

        func string(_ node: JSON.Node, _ key: StaticString) -> String? { member(node, key).flatMap(json.string) }
        func double(_ node: JSON.Node, _ key: StaticString) -> Double? { member(node, key).flatMap(json.double) }
        func int(_ node: JSON.Node, _ key: StaticString) -> Int? { member(node, key).flatMap(json.int64).map { Int($0) } }

        func elements(_ node: JSON.Node, _ key: StaticString) -> [JSON.Node] {
            guard let array = member(node, key), json.kind(array) == .array else { return [] }
            return Array(json.elements(array))
        }

        func rate(_ node: JSON.Node?) -> Rate {
            guard let node else { return Rate(successes: 0, trials: 0, devices: 0, rate: nil) }
            return Rate(successes: int(node, "successes") ?? 0, trials: int(node, "trials") ?? 0,
                        devices: int(node, "devices") ?? 0, rate: double(node, "rate"))
        }

        func test(_ node: JSON.Node?) -> Test? {
            guard let node, let lower = double(node, "lower"), let upper = double(node, "upper"),
                  let p = double(node, "p_value") else { return nil }
            return Test(lower: lower, upper: upper, pValue: p)
        }

        func lift(_ node: JSON.Node?) -> Lift? {
            guard let node, let estimate = double(node, "estimate") else { return nil }
            return Lift(estimate: estimate, standardError: double(node, "standard_error") ?? 0,
                        fixed: test(member(node, "fixed")), sequential: test(member(node, "sequential")),
                        chanceToWin: double(node, "chance_to_win"))
        }

        func comparison(_ node: JSON.Node, arm: String) -> Comparison {
            Comparison(arm: arm, metric: string(node, "metric") ?? "", role: string(node, "role") ?? "",
                       direction: string(node, "direction"), confidence: double(node, "confidence"),
                       control: rate(member(node, "control")),
                       variant: rate(member(node, "variant")), absolute: lift(member(node, "absolute")),
                       relative: lift(member(node, "relative")), logRatio: lift(member(node, "log_ratio")),
                       pValueCorrection: string(node, "p_value_correction"), unavailable: string(node, "unavailable"),
                       guardrailViolated: member(node, "guardrail_violated").flatMap(json.bool) ?? false,
                       guardrailUntestedAndWorse: member(node, "guardrail_untested_and_worse").flatMap(json.bool) ?? false,
                       varianceReduction: member(node, "cuped").flatMap { double($0, "variance_reduction") })
        }
    }
}
