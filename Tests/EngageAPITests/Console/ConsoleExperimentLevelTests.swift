import EngageConsole
import EngageCore
import Foundation
import Testing

/// The experiment page labels each interval with the level it was computed at. With several
/// treatments the primary metric's intervals are Bonferroni-corrected (97.5% for two), and a
/// definition may use another alpha; the header said "fixed 95%" for all of them, so a reader
/// took a 97.5% interval for a 95% one (and a 90% one, at alpha 0.1, for a 95% one).
@Suite struct ConsoleExperimentLevelTests {
    static let viewer = ConsoleViewer(apps: [.init(id: "app", canAdminister: true)], app: .init(id: "app", canAdminister: true),
                                      formToken: "token")

    @Test func everyIntervalShowsItsOwnLevel() throws {
        let definition = ExperimentDefinition(
            id: "three-arms", appID: "app",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.34, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.33),
                   ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.33)],
            primaryMetric: .open, guardrails: [ExperimentGuardrail(.dismiss)],
            startAt: Timestamp(microsecondsSinceEpoch: 1_772_000_000_000_000), status: .running)
        var tallies = ExperimentTallies(definition: definition)
        for (arm, opened) in [("control", 100), ("treatment", 110), ("poster", 120)] {
            for i in 0..<1_000 {
                _ = tallies.record(arm: arm, device: "\(arm)-\(i)", FunnelCounts([
                    .notifications: 1, .delivered: 1, .displayed: 1, .opened: i < opened ? 1 : 0, .dismissed: i < 50 ? 1 : 0]))
            }
        }
        let result = ExperimentAnalysis.run(definition: definition, tallies: tallies,
                                            now: Timestamp(microsecondsSinceEpoch: 1_772_100_000_000_000))
        let run = ExperimentRunSummary(id: 1, scheduledFor: result.analyzedAt, isManual: false, status: "done", error: nil,
                                       result: result.canonicalJSON)
        let html = ExperimentView(definition: definition, runs: [run], lifecycle: [], viewer: Self.viewer).page().render()
        #expect(!html.contains("fixed 95%"))
        let primary = try #require(html.range(of: #"data-arm="treatment" data-metric="open""#))
        let guardrail = try #require(html.range(of: #"data-arm="treatment" data-metric="dismiss""#))
        let primaryRow = html[primary.lowerBound..<guardrail.lowerBound]
        #expect(primaryRow.contains("at 97.5%"), "\(primaryRow)")
        let guardrailRow = html[guardrail.lowerBound...].prefix(800)
        #expect(guardrailRow.contains("at 95%"), "\(guardrailRow)")
    }
}

extension ConsoleExperimentLevelTests {
    /// A level close to 1 was rounded to one decimal: at alpha 0.0001 (or 0.001 over two
    /// treatments) the label read "at 100%", a level no interval has, and a reader could not
    /// tell a 99.99% interval from a 99.9% one.
    @Test func aLevelCloseToOneIsNotShownAsOneHundredPercent() throws {
        let definition = ExperimentDefinition(
            id: "strict", appID: "app",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.34, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.33),
                   ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.33)],
            primaryMetric: .open, guardrails: [ExperimentGuardrail(.dismiss)], alpha: 0.0001,
            startAt: Timestamp(microsecondsSinceEpoch: 1_772_000_000_000_000), status: .running)
        var tallies = ExperimentTallies(definition: definition)
        for (arm, opened) in [("control", 100), ("treatment", 110), ("poster", 120)] {
            for i in 0..<1_000 {
                _ = tallies.record(arm: arm, device: "\(arm)-\(i)", FunnelCounts([
                    .notifications: 1, .delivered: 1, .displayed: 1, .opened: i < opened ? 1 : 0, .dismissed: i < 50 ? 1 : 0]))
            }
        }
        let result = ExperimentAnalysis.run(definition: definition, tallies: tallies,
                                            now: Timestamp(microsecondsSinceEpoch: 1_772_100_000_000_000))
        let run = ExperimentRunSummary(id: 1, scheduledFor: result.analyzedAt, isManual: false, status: "done", error: nil,
                                       result: result.canonicalJSON)
        let html = ExperimentView(definition: definition, runs: [run], lifecycle: [], viewer: Self.viewer).page().render()
        #expect(!html.contains("at 100%"))
        let primary = try #require(html.range(of: #"data-arm="treatment" data-metric="open""#))
        let guardrail = try #require(html.range(of: #"data-arm="treatment" data-metric="dismiss""#))
        #expect(html[primary.lowerBound..<guardrail.lowerBound].contains("at 99.995%"))
        #expect(html[guardrail.lowerBound...].prefix(800).contains("at 99.99%"))
    }
}
