import Foundation
import Testing
@testable import EngageCore

extension ExperimentDefinition {
    /// Full against adaptive, 50/50, on opens, with the two default guardrails.
    static func sample(id: String = "strategy-full-vs-adaptive", arms: [ExperimentArmDefinition]? = nil,
                       coverage: Double = 1, analysis: ExperimentAnalysisSettings = ExperimentAnalysisSettings()) -> ExperimentDefinition {
        ExperimentDefinition(
            id: id, appID: "demo", categories: ["new_photo", "chat"],
            arms: arms ?? [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                           ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)],
            coverage: coverage, primaryMetric: .open,
            guardrails: [ExperimentGuardrail(.dismiss), ExperimentGuardrail(.richDisplay)],
            schedule: try! CronSchedule("*/15 * * * *"),
            startAt: Timestamp(rfc3339: "2026-03-01T00:00:00Z"), stopAt: Timestamp(rfc3339: "2026-04-01T00:00:00Z"),
            status: .running, analysis: analysis)
    }
}

@Suite struct ExperimentDefinitionTests {
    @Test func defaultsAndGuardrailDirections() {
        let definition = ExperimentDefinition.sample()
        #expect(definition.problems.isEmpty)
        #expect(definition.hashSeed == "strategy-full-vs-adaptive")
        #expect(definition.alpha == 0.05)
        #expect(definition.guardrails[0].direction == .mustNotIncrease)
        #expect(definition.guardrails[1].direction == .mustNotDecrease)
        #expect(definition.control?.name == "control")
        #expect(definition.treatments.map(\.name) == ["treatment"])
        #expect(definition.admits(category: "chat"))
        #expect(!definition.admits(category: "promo"))
        #expect(definition.isActive(at: Timestamp(rfc3339: "2026-03-10T00:00:00Z")!))
        #expect(!definition.isActive(at: Timestamp(rfc3339: "2026-04-01T00:00:00Z")!))
    }

    @Test func problemsNameTheirFields() {
        var definition = ExperimentDefinition.sample()
        definition.id = "Full vs adaptive"
        definition.appID = ""
        definition.categories = ["chat", "chat"]
        definition.arms = [ExperimentArmDefinition(name: "a", strategy: .full, weight: 0.7),
                           ExperimentArmDefinition(name: "a", strategy: .poster, weight: 0)]
        definition.hashSeed = ""
        definition.coverage = 1.5
        definition.guardrails = [ExperimentGuardrail(.open), ExperimentGuardrail(.dismiss), ExperimentGuardrail(.dismiss)]
        definition.alpha = 0.5
        definition.stopAt = definition.startAt
        definition.analysis.minimumDevicesPerArm = 1
        #expect(definition.problems.map(\.description) == [
            "id: must be 1 to 100 bytes of lowercase letters and digits, separated by single '-' or '_'",
            "app_id: must be 1 to 100 bytes long",
            "categories[1]: repeats \"chat\"",
            "arms[1].name: repeats \"a\"",
            "arms[1].weight: must lie in (0, 1]",
            "arms: must have exactly one control arm, found 0",
            "arms: weights must add up to 1, found 0.7",
            "hash_seed: must be 1 to 100 bytes long",
            "coverage: must lie in (0, 1]",
            "guardrails[0].metric: must differ from the primary metric",
            "guardrails[2].metric: repeats \"dismiss\"",
            "alpha: must lie in (0, 0.5)",
            "stop_at: must be after start_at",
            "minimum_devices_per_arm: must be at least 2",
        ])
        #expect(throws: ExperimentProblem(field: "id", problem: "must be 1 to 100 bytes of lowercase letters and digits, separated by single '-' or '_'")) {
            try definition.validate()
        }
        var draft = ExperimentDefinition.sample()
        draft.startAt = nil
        #expect(draft.problems.map(\.description) == ["start_at: is required once the experiment is running"])
        draft.status = .draft
        #expect(draft.problems.isEmpty)
        draft.arms = [draft.arms[0]]
        draft.arms[0].weight = 1
        #expect(draft.problems.map(\.description) == ["arms: must have at least 2 arms"])
    }

    @Test func slugs() {
        for good in ["a", "strategy-full", "exp_2026_03", "a-b_c"] { #expect(ExperimentDefinition.isSlug(good), "\(good)") }
        for bad in ["", "-a", "a-", "a--b", "A", "a b", "é", String(repeating: "a", count: 101)] {
            #expect(!ExperimentDefinition.isSlug(bad), "\(bad)")
        }
    }

    @Test func canonicalJSONRoundTrips() throws {
        var definition = ExperimentDefinition.sample()
        definition.analysis.maximumNotificationsPerArm = 500_000
        let bytes = definition.canonicalJSON
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == #"{"id":"strategy-full-vs-adaptive","app_id":"demo","categories":["new_photo","chat"],"arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},{"name":"treatment","strategy":"adaptive","weight":0.5,"control":false}],"hash_seed":"strategy-full-vs-adaptive","coverage":1.0,"primary_metric":"open","guardrails":[{"metric":"dismiss","direction":"must_not_increase"},{"metric":"rich_display","direction":"must_not_decrease"}],"alpha":0.05,"schedule":"*/15 * * * *","start_at":"2026-03-01T00:00:00Z","stop_at":"2026-04-01T00:00:00Z","status":"running","analysis":{"sequential_tuning":5000.0,"equivalence_margin":0.02,"minimum_devices_per_arm":100,"maximum_notifications_per_arm":500000,"cuped":{"pre_period_days":14}}}"#)
        let decoded = try ExperimentDefinition(json: bytes)
        #expect(decoded == definition)
        #expect(decoded.canonicalJSON == bytes)
    }

    @Test func decodingFillsDefaults() throws {
        let text = #"""
        {"arms": [{"name": "control", "strategy": "none", "weight": 0.25, "control": true},
                  {"name": "poster", "strategy": "poster", "weight": 0.75}],
         "primary_metric": "rich_display", "app_id": "demo", "id": "poster-rollout", "start_at": null}
        """#
        let definition = try ExperimentDefinition(json: Array(text.utf8))
        #expect(definition == ExperimentDefinition(
            id: "poster-rollout", appID: "demo",
            arms: [ExperimentArmDefinition(name: "control", strategy: .noAttachment, weight: 0.25, isControl: true),
                   ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.75)],
            primaryMetric: .richDisplay))
        #expect(definition.schedule == .hourly)
        #expect(definition.status == .draft)
    }

    @Test func decodingProblemsNameTheirFields() {
        let valid = String(decoding: ExperimentDefinition.sample().canonicalJSON, as: UTF8.self)
        let cases: [(String, String)] = [
            ("{", "$: malformed JSON at byte 1: unexpected end of input"),
            ("[]", "$: must be an object"),
            (valid.replacingOccurrences(of: #""status":"running""#, with: #""status":"paused""#),
             "status: must be one of draft, running, stopped"),
            (valid.replacingOccurrences(of: #""strategy":"adaptive""#, with: #""strategy":"huge""#),
             "arms[1].strategy: must be one of none, full, thumbnail, cached, adaptive, poster"),
            (valid.replacingOccurrences(of: #""weight":0.5,"control":false"#, with: #""weight":"half","control":false"#),
             "arms[1].weight: must be a number"),
            (valid.replacingOccurrences(of: #""schedule":"*/15 * * * *""#, with: #""schedule":"0 25 * * *""#),
             "schedule: hour: 25 is out of range 0-23"),
            (valid.replacingOccurrences(of: #""start_at":"2026-03-01T00:00:00Z""#, with: #""start_at":"2026-03-01""#),
             "start_at: must be an RFC 3339 timestamp with a time zone"),
            (valid.replacingOccurrences(of: #""alpha":0.05"#, with: #""alpha":0.05,"beta":0.2"#), "beta: unknown field"),
            (valid.replacingOccurrences(of: #""minimum_devices_per_arm":100"#, with: #""minimum_devices_per_arm":1.5"#),
             "analysis.minimum_devices_per_arm: must be an integer"),
            (valid.replacingOccurrences(of: #"{"name":"control","#, with: "{"), "arms[0].name: is required"),
            (valid.replacingOccurrences(of: #""coverage":1.0"#, with: #""coverage":0"#), "coverage: must lie in (0, 1]"),
        ]
        for (text, message) in cases {
            do {
                _ = try ExperimentDefinition(json: Array(text.utf8))
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.description == message)
            }
        }
    }
}

@Suite struct ExperimentAssignmentTests {
    @Test func matchesGrowthBookHashV2() {
        // hashV2("seed", "a") = 0.0505 and hashV2("seed", "b") = 0.2696 (GrowthBook conformance
        // cases); with arms of 0.1 / 0.2 / 0.7 ([0, 0.1), [0.1, 0.3), [0.3, 1)) device "a" lands in
        // the first, "b" in the second.
        let definition = ExperimentDefinition.sample(arms: [
            ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.1, isControl: true),
            ExperimentArmDefinition(name: "thumb", strategy: .thumbnail, weight: 0.2),
            ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.7),
        ])
        var seeded = definition
        seeded.hashSeed = "seed"
        #expect(ExperimentAssignment.arm(forDevice: "a", definition: seeded)?.arm.name == "control")
        #expect(ExperimentAssignment.arm(forDevice: "b", definition: seeded)?.arm.name == "thumb")
        #expect(ExperimentAssignment.arm(forDevice: "b", definition: seeded)?.probability == 0.2)
        // foo/ab = 0.2575: the second arm of 0.1 / 0.2 / 0.7 ends at 0.3.
        seeded.hashSeed = "foo"
        #expect(ExperimentAssignment.arm(forDevice: "ab", definition: seeded)?.arm.name == "thumb")
        // Every conformance vector through the experiment's own path, as ranges of 0.0001 width.
        for vector in Independent.growthBookHashes where vector.version == 2 {
            var probe = definition
            probe.hashSeed = vector.seed
            let lower = vector.value
            probe.arms = [ExperimentArmDefinition(name: "below", strategy: .full, weight: lower, isControl: true),
                          ExperimentArmDefinition(name: "at", strategy: .full, weight: 0.0001),
                          ExperimentArmDefinition(name: "above", strategy: .full, weight: 1 - lower - 0.0001)]
            #expect(ExperimentAssignment.arm(forDevice: vector.id, definition: probe)?.arm.name == "at", "\(vector)")
        }
    }

    @Test func coverageExcludesWithoutMovingAnyone() {
        let full = ExperimentDefinition.sample()
        let half = ExperimentDefinition.sample(coverage: 0.5)
        var counts = [String: Int]()
        var excluded = 0
        for n in 0..<10_000 {
            let device = "device-\(n)"
            let a = ExperimentAssignment.arm(forDevice: device, definition: full)!
            #expect(ExperimentAssignment.arm(forDevice: device, definition: full)?.arm == a.arm) // stable
            if let b = ExperimentAssignment.arm(forDevice: device, definition: half) {
                #expect(b.arm == a.arm)
            } else {
                excluded += 1
            }
            counts[a.arm.name, default: 0] += 1
        }
        #expect((4_800...5_200).contains(counts["control"]!))
        #expect((4_800...5_200).contains(excluded))
        #expect(SampleRatioMismatch.pValue(observed: [counts["control"]!, counts["treatment"]!], weights: [0.5, 0.5]) > 0.001)
    }

    @Test func agreesWithTheSimulator() {
        let definition = ExperimentDefinition.sample()
        let simulated = SimulatedExperiment(id: definition.id, arms: [ExperimentArm("control", strategy: .full, weight: 0.5),
                                                                      ExperimentArm("treatment", strategy: .adaptive, weight: 0.5)])
        for n in 1...2_000 {
            let device = TrafficSimulator.deviceID(n)
            #expect(ExperimentAssignment.arm(forDevice: device, definition: definition)?.arm.name
                    == simulated.arm(forDevice: device)?.name)
        }
    }
}
