/// The canonical JSON of a definition, to store it and to log it as an event payload.
///
///     {"id": s, "app_id": s, "categories": [s, ...],
///      "arms": [{"name": s, "strategy": "full" | ..., "weight": x, "control": bool}, ...],
///      "hash_seed": s, "coverage": x, "primary_metric": "open" | ...,
///      "guardrails": [{"metric": s, "direction": "must_not_decrease" | "must_not_increase"}, ...],
///      "alpha": x, "schedule": "0 * * * *", "start_at": rfc3339 | null, "stop_at": rfc3339 | null,
///      "status": "draft" | "running" | "stopped",
///      "analysis": {"sequential_tuning": x, "equivalence_margin": x,
///                   "minimum_devices_per_arm": n, "maximum_notifications_per_arm": n | null,
///                   "cuped": {"pre_period_days": n} | "off"}}
///
/// Encoding writes every key, in this order, compactly; equal definitions encode to equal bytes.
/// Decoding accepts any key order and whitespace; `hash_seed`, `categories`, `coverage`,
/// `guardrails`, `alpha`, `schedule`, `start_at`, `stop_at`, `status`, `analysis` and its members
/// may be left out (or `null`) for their defaults. Unknown keys are rejected.
extension ExperimentDefinition {
    public var canonicalJSON: [UInt8] {
        var w = JSONWriter(capacity: 512)
        w.beginObject()
        w.key("id"); w.string(id)
        w.key("app_id"); w.string(appID)
        w.key("categories"); w.strings(categories)
        w.key("arms")
        w.objects(arms) { w, arm in
            w.key("name"); w.string(arm.name)
            w.key("strategy"); w.string(arm.strategy.rawValue)
            w.key("weight"); w.double(arm.weight)
            w.key("control"); w.bool(arm.isControl)
        }
        w.key("hash_seed"); w.string(hashSeed)
        w.key("coverage"); w.double(coverage)
        w.key("primary_metric"); w.string(primaryMetric.rawValue)
        w.key("guardrails")
        w.objects(guardrails) { w, guardrail in
            w.key("metric"); w.string(guardrail.metric.rawValue)
            w.key("direction"); w.string(guardrail.direction.rawValue)
        }
        w.key("alpha"); w.double(alpha)
        w.key("schedule"); w.string(schedule.expression)
        w.key("start_at"); w.optionalString(startAt?.rfc3339)
        w.key("stop_at"); w.optionalString(stopAt?.rfc3339)
        w.key("status"); w.string(status.rawValue)
        w.key("analysis")
        w.beginObject()
        w.key("sequential_tuning"); w.double(analysis.sequentialTuning)
        w.key("equivalence_margin"); w.double(analysis.equivalenceMargin)
        w.key("minimum_devices_per_arm"); w.int(analysis.minimumDevicesPerArm)
        w.key("maximum_notifications_per_arm")
        if let maximum = analysis.maximumNotificationsPerArm { w.int(maximum) } else { w.null() }
        w.key("cuped")
        if let days = analysis.cupedPrePeriodDays {
            w.beginObject()
            w.key("pre_period_days"); w.int(days)
            w.endObject()
        } else {
            w.string("off")
        }
        w.endObject()
        w.endObject()
        return w.bytes
    }

    /// Decodes and validates a definition; throws the first problem (malformed JSON has the
    /// field `$`).
    public init(json bytes: [UInt8]) throws(ExperimentProblem) {
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch {
            throw ExperimentProblem(field: "$", problem: "malformed JSON at byte \(error.offset): \(error.reason)")
        }
        self = try DefinitionReader(json: json).definition(json.root)
        try validate()
    }
}

/// Reads the fields of a definition, naming the path of the first problem.
private struct DefinitionReader {
    let json: JSON

    func definition(_ node: JSON.Node) throws(ExperimentProblem) -> ExperimentDefinition {
        let fields = try object(node, "$", known: [
            "id", "app_id", "categories", "arms", "hash_seed", "coverage", "primary_metric", "guardrails",
            "alpha", "schedule", "start_at", "stop_at", "status", "analysis",
        ])
        let id = try string(required(fields, "id"), "id")
        let appID = try string(required(fields, "app_id"), "app_id")
        var categories: [String] = []
        if let node = fields["categories"] {
            for (i, element) in try array(node, "categories").enumerated() {
                categories.append(try string(element, "categories[\(i)]"))
            }
        }
        var arms: [ExperimentArmDefinition] = []
        for (i, element) in try array(required(fields, "arms"), "arms").enumerated() {
            let path = "arms[\(i)]"
            let armFields = try object(element, path, known: ["name", "strategy", "weight", "control"])
            arms.append(ExperimentArmDefinition(
                name: try string(required(armFields, "name", path), path + ".name"),
                strategy: try enumeration(required(armFields, "strategy", path), path + ".strategy"),
                weight: try number(required(armFields, "weight", path), path + ".weight"),
                isControl: try armFields["control"].map { (n) throws(ExperimentProblem) in try bool(n, path + ".control") } ?? false))
        }
        var guardrails: [ExperimentGuardrail] = []
        if let node = fields["guardrails"] {
            for (i, element) in try array(node, "guardrails").enumerated() {
                let path = "guardrails[\(i)]"
                let guardrailFields = try object(element, path, known: ["metric", "direction"])
                let metric: ExperimentMetric = try enumeration(required(guardrailFields, "metric", path), path + ".metric")
                let direction: GuardrailDirection? = try guardrailFields["direction"].map {
                    (n) throws(ExperimentProblem) in try enumeration(n, path + ".direction")
                }
                guardrails.append(ExperimentGuardrail(metric, direction: direction))
            }
        }
        var schedule = CronSchedule.hourly
        if let node = fields["schedule"] {
            let text = try string(node, "schedule")
            do {
                schedule = try CronSchedule(text)
            } catch {
                throw ExperimentProblem(field: "schedule", problem: error.description)
            }
        }
        var analysis = ExperimentAnalysisSettings()
        if let node = fields["analysis"] {
            let settings = try object(node, "analysis", known: [
                "sequential_tuning", "equivalence_margin", "minimum_devices_per_arm", "maximum_notifications_per_arm",
                "cuped",
            ])
            if let n = settings["sequential_tuning"] {
                analysis.sequentialTuning = try number(n, "analysis.sequential_tuning")
            }
            if let n = settings["equivalence_margin"] {
                analysis.equivalenceMargin = try number(n, "analysis.equivalence_margin")
            }
            if let n = settings["minimum_devices_per_arm"] {
                analysis.minimumDevicesPerArm = try integer(n, "analysis.minimum_devices_per_arm")
            }
            if let n = settings["maximum_notifications_per_arm"] {
                analysis.maximumNotificationsPerArm = try integer(n, "analysis.maximum_notifications_per_arm")
            }
            if let n = settings["cuped"] {
                analysis.cupedPrePeriodDays = try cuped(n, "analysis.cuped")
            }
        }
        return ExperimentDefinition(
            id: id, appID: appID, categories: categories, arms: arms,
            hashSeed: try fields["hash_seed"].map { (n) throws(ExperimentProblem) in try string(n, "hash_seed") },
            coverage: try fields["coverage"].map { (n) throws(ExperimentProblem) in try number(n, "coverage") } ?? 1,
            primaryMetric: try enumeration(required(fields, "primary_metric"), "primary_metric"),
            guardrails: guardrails,
            alpha: try fields["alpha"].map { (n) throws(ExperimentProblem) in try number(n, "alpha") } ?? 0.05,
            schedule: schedule,
            startAt: try fields["start_at"].map { (n) throws(ExperimentProblem) in try timestamp(n, "start_at") },
            stopAt: try fields["stop_at"].map { (n) throws(ExperimentProblem) in try timestamp(n, "stop_at") },
            status: try fields["status"].map { (n) throws(ExperimentProblem) in try enumeration(n, "status") } ?? .draft,
            analysis: analysis)
    }

    // MARK: Pieces

    /// The non-null members of an object by name; rejects unknown names.
    private func object(_ node: JSON.Node, _ path: String, known: Set<String>) throws(ExperimentProblem) -> [String: JSON.Node] {
        guard json.kind(node) == .object else { throw ExperimentProblem(field: path, problem: "must be an object") }
        var fields: [String: JSON.Node] = [:]
        for (key, value) in json.members(node) {
            let name = json.string(key) ?? ""
            let field = path == "$" ? name : path + "." + name
            guard known.contains(name) else { throw ExperimentProblem(field: field, problem: "unknown field") }
            if !json.isNull(value) { fields[name] = value }
        }
        return fields
    }

    private func required(_ fields: [String: JSON.Node], _ name: String, _ path: String = "$") throws(ExperimentProblem) -> JSON.Node {
        guard let node = fields[name] else {
            throw ExperimentProblem(field: path == "$" ? name : path + "." + name, problem: "is required")
        }
        return node
    }

    private func array(_ node: JSON.Node, _ path: String) throws(ExperimentProblem) -> [JSON.Node] {
        guard json.kind(node) == .array else { throw ExperimentProblem(field: path, problem: "must be an array") }
        return Array(json.elements(node))
    }

    /// `value`, or the problem at `path` when the node did not read as one (nil).
    private func expect<Value>(_ value: Value?, _ path: String,
                               _ problem: @autoclosure () -> String) throws(ExperimentProblem) -> Value {
        guard let value else { throw ExperimentProblem(field: path, problem: problem()) }
        return value
    }

    private func string(_ node: JSON.Node, _ path: String) throws(ExperimentProblem) -> String {
        try expect(json.string(node), path, "must be a string")
    }

    private func number(_ node: JSON.Node, _ path: String) throws(ExperimentProblem) -> Double {
        try expect(json.double(node), path, "must be a number")
    }

    private func integer(_ node: JSON.Node, _ path: String) throws(ExperimentProblem) -> Int {
        try expect(json.int64(node).flatMap { Int(exactly: $0) }, path, "must be an integer")
    }

    /// `{"pre_period_days": n}` (the days may be left out for the default) or `"off"`.
    private func cuped(_ node: JSON.Node, _ path: String) throws(ExperimentProblem) -> Int? {
        if json.kind(node) == .string {
            guard json.string(node) == "off" else {
                throw ExperimentProblem(field: path, problem: "must be \"off\" or an object {\"pre_period_days\": n}")
            }
            return nil
        }
        guard json.kind(node) == .object else {
            throw ExperimentProblem(field: path, problem: "must be \"off\" or an object {\"pre_period_days\": n}")
        }
        let fields = try object(node, path, known: ["pre_period_days"])
        return try fields["pre_period_days"].map { (n) throws(ExperimentProblem) in try integer(n, path + ".pre_period_days") }
            ?? ExperimentAnalysisSettings.defaultCupedPrePeriodDays
    }

    private func bool(_ node: JSON.Node, _ path: String) throws(ExperimentProblem) -> Bool {
        try expect(json.bool(node), path, "must be true or false")
    }

    private func timestamp(_ node: JSON.Node, _ path: String) throws(ExperimentProblem) -> Timestamp {
        try expect(json.string(node).flatMap { Timestamp(rfc3339: $0) }, path, "must be an RFC 3339 timestamp with a time zone")
    }

    private func enumeration<Value: RawRepresentable & CaseIterable>(_ node: JSON.Node, _ path: String) throws(ExperimentProblem) -> Value
    where Value.RawValue == String {
        try expect(json.string(node).flatMap { Value(rawValue: $0) }, path, Value.mustBeOneOf)
    }
}
