import Foundation
import Testing
@testable import EngageCore

/// Every rendering of the report, the experiment analysis and the strategy replay, compared with
/// the files in `Golden/` (text to the byte, numbers to 1e-12): a refactoring must leave what users and stored results
/// see unchanged. The inputs are the report fixtures and a seeded simulation folded through the
/// same code as the projector (`NotificationState` -> contribution -> rows) and the analysis.
///
/// After an intended change of an output, run with `ENGAGE_RECORD_GOLDEN=1` to rewrite the files
/// and review their diff.
@Suite struct GoldenOutputTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    static let now = Timestamp(rfc3339: "2026-11-29T20:00:00Z")!

    /// Compares `actual` with the golden file `name`; on a difference writes `actual` beside the
    /// build products so the two can be diffed.
    static func check(_ actual: [UInt8], _ name: String) throws {
        let url = directory.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["ENGAGE_RECORD_GOLDEN"] != nil {
            try Data(actual).write(to: url)
            return
        }
        let expected = try [UInt8](Data(contentsOf: url))
        guard actual != expected else { return }
        // The last digit of a double depends on the order of floating-point operations (a sum
        // over a dictionary differs between processes, Swift seeds hashing per process; an
        // equivalent rewrite of a formula reorders them): numbers need only agree to 1e-12.
        let differences = numberAwareDifferences(actual, expected, relative: 1e-12)
        if !differences.isEmpty {
            let dump = FileManager.default.temporaryDirectory.appendingPathComponent("golden-actual-" + name)
            try? Data(actual).write(to: dump)
            Issue.record("\(name) differs from its golden file (actual output in \(dump.path)): \(differences.prefix(3).joined(separator: "; "))")
        }
    }

    /// Where `actual` and `expected` differ: the text between numbers must be equal, each number
    /// within `relative` of its golden value.
    static func numberAwareDifferences(_ actual: [UInt8], _ expected: [UInt8], relative: Double) -> [String] {
        let text = String(decoding: actual, as: UTF8.self)
        let golden = String(decoding: expected, as: UTF8.self)
        let number = /-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/
        if text.replacing(number, with: "#") != golden.replacing(number, with: "#") {
            return ["the text around the numbers differs"]
        }
        let numbers = text.matches(of: number).map { Double($0.output.0)! }
        let goldenNumbers = golden.matches(of: number).map { Double($0.output.0)! }
        return zip(numbers, goldenNumbers).enumerated().compactMap { index, pair in
            abs(pair.0 - pair.1) > relative * max(abs(pair.0), abs(pair.1)) ? "number \(index) is \(pair.0), golden \(pair.1)" : nil
        }
    }

    static func check(_ actual: String, _ name: String) throws {
        try check(Array(actual.utf8), name)
    }

    @Test func theComparisonSeesAChangedNumberOrWordButNotALastDigit() {
        let golden = Array(#"{"p":0.0356,"lower":-0.1551772438833009,"label":"crude"}"#.utf8)
        #expect(Self.numberAwareDifferences(Array(#"{"p":0.0356,"lower":-0.155177243883301,"label":"crude"}"#.utf8), golden, relative: 1e-12).isEmpty)
        #expect(Self.numberAwareDifferences(Array(#"{"p":0.0317,"lower":-0.1551772438833009,"label":"crude"}"#.utf8), golden, relative: 1e-12) == ["number 0 is 0.0317, golden 0.0356"])
        #expect(!Self.numberAwareDifferences(Array(#"{"p":0.0356,"lower":-0.1551772438833009,"label":"adjusted"}"#.utf8), golden, relative: 1e-12).isEmpty)
    }

    // MARK: Report

    @Test(arguments: ReportGrouping.allCases)
    func reportFixtureRenderings(_ grouping: ReportGrouping) throws {
        var report = EngagementReportTests.report(grouping)
        // A read model a little behind; the simulated reports below pin the rendering without one.
        report.currentAsOf = ReportFreshness(checkpointAt: Timestamp(rfc3339: "2026-11-29T19:59:57.25Z")!, lagEvents: 1204, lagSeconds: 2.75)
        try Self.check(report.renderTable(), "report-\(grouping.rawValue).txt")
        try Self.check(report.renderJSON(), "report-\(grouping.rawValue).json")
        try Self.check(report.renderCSV(), "report-\(grouping.rawValue).csv")
        // The page differs between groupings only in the sections the other formats already pin.
        if grouping == .category || grouping == .action {
            try Self.check(report.renderHTML(), "report-\(grouping.rawValue).html")
        }
    }

    /// The simulated notifications, folded into one state each.
    static let simulated: (events: [Event], states: [NotificationState]) = {
        var scenario = SimulationScenario.standard
        scenario.notificationCount = 3_000
        scenario.deviceCount = 300
        var simulator = try! TrafficSimulator(scenario: scenario, seed: 11, start: Timestamp(rfc3339: "2026-11-28T00:00:00Z")!)
        let events = simulator.remainingEvents()
        var states: [String: NotificationState] = [:]
        for event in events { states[event.notificationID, default: NotificationState()].apply(event) }
        return (events, states.keys.sorted().map { states[$0]! })
    }()

    /// The engagement and action rows the projector would store for the simulated notifications.
    static func readModelRows() -> (engagement: [EngagementRow], actions: [ActionCountRow]) {
        var buckets: [EngagementContribution.Bucket: EngagementContribution.Counters] = [:]
        for state in simulated.states {
            for delta in EngagementContribution.difference(from: nil, to: state.engagementContribution) {
                buckets[delta.bucket, default: .zero] += delta.counters
            }
        }
        var engagement: [EngagementRow] = []
        var actions: [ActionCountRow] = []
        for (bucket, counters) in buckets {
            let kind = bucket.attachmentKind?.rawValue ?? "unknown"
            engagement.append(EngagementRow(appID: "demo", category: bucket.category, presentation: bucket.presentation,
                                            attachmentKind: kind, day: bucket.day, counts: counters.funnel))
            for (id, count) in counters.actions {
                actions.append(ActionCountRow(appID: "demo", category: bucket.category, presentation: bucket.presentation,
                                              attachmentKind: kind, day: bucket.day, actionID: id, count: count))
            }
        }
        return (engagement, actions)
    }

    @Test(arguments: ReportGrouping.allCases)
    func reportOfSimulatedTraffic(_ grouping: ReportGrouping) throws {
        let rows = Self.readModelRows()
        let report = EngagementReport.build(engagement: rows.engagement, actions: rows.actions, grouping: grouping,
                                            generatedAt: Self.now)
        try Self.check(report.renderJSON(), "simulated-report-\(grouping.rawValue).json")
        try Self.check(report.renderCSV(), "simulated-report-\(grouping.rawValue).csv")
    }

    // MARK: Experiments

    static func experimentDefinition(arms: Int) -> ExperimentDefinition {
        var definition = ExperimentDefinition.sample()
        definition.categories = []
        if arms == 3 {
            // A third arm the traffic never names: its tally stays empty.
            definition.arms = [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.4, isControl: true),
                               ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.4),
                               ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.2)]
            definition.guardrails = [ExperimentGuardrail(.expansion), ExperimentGuardrail(.reply),
                                     ExperimentGuardrail(.dismiss), ExperimentGuardrail(.richDisplay)]
        }
        return definition
    }

    @Test(arguments: [2, 3])
    func experimentAnalysisOfSimulatedTraffic(_ arms: Int) throws {
        let definition = Self.experimentDefinition(arms: arms)
        var tallies = ExperimentTallies(definition: definition)
        for state in Self.simulated.states { tallies.add(state) }
        let result = ExperimentAnalysis.run(definition: definition, tallies: tallies, now: Self.now)
        try Self.check(result.canonicalJSON, "experiment-\(arms)-arms.json")

        // The replay's fold reads the same notifications from their event facts alone.
        let index = ExperimentArmIndex(definition)
        var folds: [String: ExperimentObservation.Fold] = [:]
        for event in Self.simulated.events {
            folds[event.notificationID, default: ExperimentObservation.Fold()].apply(ExperimentEventFacts(event, arms: index)) {
                (event.category, event.deviceID)
            }
        }
        var folded = ExperimentTallies(definition: definition)
        for id in folds.keys.sorted() { folded.add(folds[id]!.observation!) }
        let fromFacts = ExperimentAnalysis.run(definition: definition, tallies: folded, now: Self.now)
        try Self.check(fromFacts.canonicalJSON, "experiment-\(arms)-arms.json")
    }

    // MARK: Strategy replay

    @Test func strategyReplayOfSimulatedTraffic() throws {
        let events = Self.simulated.events.sorted { a, b in
            if a.deviceID != b.deviceID { return a.deviceID < b.deviceID }
            if a.occurredAt != b.occurredAt { return a.occurredAt < b.occurredAt }
            return a.eventID < b.eventID
        }
        var replay = StrategyReplay(strategy: AdaptiveStrategy())
        for event in events { replay.feed(event) }
        let result = replay.finish()
        // The propensity estimates sum over a dictionary of cells: their last digits vary by process.
        try Self.check(result.renderJSON(), "replay-adaptive.json")
        try Self.check(result.renderText(), "replay-adaptive.txt")
    }
}
