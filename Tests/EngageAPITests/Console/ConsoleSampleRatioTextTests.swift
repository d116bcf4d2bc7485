import EngageConsole
import EngageCore
import Testing

/// The sample ratio check decides only on cells that expect 5 devices, but the page still read
/// its p-value against the threshold: "p = 2.2e-05 against the threshold 0.001: the arms' device
/// counts match their weights", a sentence its own figures contradict.
@Suite struct ConsoleSampleRatioTextTests {
    static let viewer = ConsoleViewer(apps: [.init(id: "app", canAdminister: true)], app: .init(id: "app", canAdminister: true),
                                      formToken: "token")

    @Test func aPValueBelowTheThresholdThatDecidesNothingSaysWhy() throws {
        let definition = ExperimentDefinition(
            id: "first-look", appID: "app",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.9, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.1)],
            primaryMetric: .open, startAt: Timestamp(microsecondsSinceEpoch: 1_772_000_000_000_000), status: .running)
        var tallies = ExperimentTallies(definition: definition)
        for i in 0..<2 {
            _ = tallies.record(arm: "treatment", device: "treatment-\(i)", FunnelCounts([.notifications: 1, .delivered: 1, .displayed: 1]))
        }
        let result = ExperimentAnalysis.run(definition: definition, tallies: tallies,
                                            now: Timestamp(microsecondsSinceEpoch: 1_772_100_000_000_000))
        #expect(result.sampleRatioMismatchPValue < 0.001 && !result.hasSampleRatioMismatch)
        let run = ExperimentRunSummary(id: 1, scheduledFor: result.analyzedAt, isManual: false, status: "done", error: nil,
                                       result: result.canonicalJSON)
        let html = ExperimentView(definition: definition, runs: [run], lifecycle: [], viewer: Self.viewer).page().render()
        let check = try #require(html.range(of: "<h3>Sample ratio check</h3>"))
        let text = html[check.upperBound...].prefix(400)
        #expect(!text.contains("match their weights"), "\(text)")
        #expect(text.contains("expecting fewer than 5 devices are pooled"), "\(text)")
    }
}
