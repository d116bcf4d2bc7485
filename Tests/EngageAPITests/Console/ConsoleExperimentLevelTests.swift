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
        let html = Self.threeArmPage(id: "three-arms")
        #expect(!html.contains("fixed 95%"))
        let primary = try #require(html.range(of: #"data-arm="treatment" data-metric="open""#))
        let guardrail = try #require(html.range(of: #"data-arm="treatment" data-metric="dismiss""#))
        let primaryRow = html[primary.lowerBound..<guardrail.lowerBound]
        #expect(primaryRow.contains("at 97.5%"), "\(primaryRow)")
        let guardrailRow = html[guardrail.lowerBound...].prefix(800)
        #expect(guardrailRow.contains("at 95%"), "\(guardrailRow)")
    }

    /// The experiment page after one analysis of three arms (one control, two treatments: the
    /// primary metric's intervals Bonferroni-corrected) with `open` as primary metric and
    /// `dismiss` as guardrail, 1,000 devices an arm, at `alpha` (0.05: the definition's default).
    static func threeArmPage(id: String, alpha: Double = 0.05) -> String {
        threeArmAnalysis(id: id, alpha: alpha).html
    }

    static func threeArmAnalysis(id: String, alpha: Double = 0.05) -> (html: String, result: ExperimentRunResult) {
        let definition = ExperimentDefinition(
            id: id, appID: "app",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.34, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.33),
                   ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.33)],
            primaryMetric: .open, guardrails: [ExperimentGuardrail(.dismiss)], alpha: alpha,
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
        return (ExperimentView(definition: definition, runs: [run], lifecycle: [], viewer: viewer).page().render(), result)
    }
}

extension ConsoleExperimentLevelTests {
    /// The per-look table shows the sequential interval decisions read (the log ratio's), not
    /// gbstats' sequential interval on the relative scale, which lies lower: beside a "ship" it
    /// could still cross 0.
    @Test func thePerLookSequentialIntervalIsTheOneThatDecides() throws {
        let (html, result) = Self.threeArmAnalysis(id: "per-look")
        let treatment = try #require(result.comparisons.first { $0.arm == "treatment" }?.metrics.first)
        let decides = try #require(treatment.logRatio?.sequential?.interval)
        let relative = try #require(treatment.relative?.sequential?.interval)
        func text(_ interval: ConfidenceInterval) -> String {
            "[" + ReportText.signedBound(interval.lower * 100, 1, noEffect: 0) + "%, "
                + ReportText.signedBound(interval.upper * 100, 1, noEffect: 0) + "%]"
        }
        #expect(text(decides) != text(relative))
        let start = try #require(html.range(of: "<h2>treatment: relative lift in open per look</h2>"))
        let section = html[start.upperBound...]
        let end = try #require(section.range(of: "</section>"))
        let perLook = section[..<end.lowerBound]
        let row = try #require(perLook.range(of: #"<tr data-look="1""#))
        #expect(perLook[row.lowerBound...].contains(text(decides)))
        #expect(!perLook[row.lowerBound...].contains(text(relative)))
    }

    /// A bound within a rounding step of 0 keeps the decimals that tell it from 0.
    @Test func aBoundNearZeroIsNotPrintedAsZero() {
        #expect(ReportText.signedBound(0.04, 1, noEffect: 0) == "+0.04")
        #expect(ReportText.signedBound(-0.04, 1, noEffect: 0) == "-0.04")
        #expect(ReportText.signedBound(2.04, 1, noEffect: 0) == "+2.0")
        #expect(ReportText.pValue(0.0104, alpha: 0.01) == "0.0104")
        #expect(ReportText.pValue(0.0104) == "0.010")
    }
}

extension ConsoleExperimentLevelTests {
    /// A level close to 1 was rounded to one decimal: at alpha 0.0001 (or 0.001 over two
    /// treatments) the label read "at 100%", a level no interval has, and a reader could not
    /// tell a 99.99% interval from a 99.9% one.
    @Test func aLevelCloseToOneIsNotShownAsOneHundredPercent() throws {
        let html = Self.threeArmPage(id: "strict", alpha: 0.0001)
        #expect(!html.contains("at 100%"))
        let primary = try #require(html.range(of: #"data-arm="treatment" data-metric="open""#))
        let guardrail = try #require(html.range(of: #"data-arm="treatment" data-metric="dismiss""#))
        #expect(html[primary.lowerBound..<guardrail.lowerBound].contains("at 99.995%"))
        #expect(html[guardrail.lowerBound...].prefix(800).contains("at 99.99%"))
    }
}

extension ConsoleExperimentLevelTests {
    /// With two treatments the primary metric's fixed p-value is Bonferroni-adjusted: the per-look
    /// table labels it as the metrics table does, not as a bare p beside the unadjusted alpha.
    @Test func thePerLookPValueNamesItsCorrection() throws {
        let (html, result) = Self.threeArmAnalysis(id: "per-look-p")
        let treatment = try #require(result.comparisons.first { $0.arm == "treatment" }?.metrics.first)
        let correction = treatment.correction.label
        #expect(correction == "bonferroni x2")
        let start = try #require(html.range(of: "<h2>treatment: relative lift in open per look</h2>"))
        let section = html[start.upperBound...]
        let perLook = section[..<(try #require(section.range(of: "</section>"))).lowerBound]
        let row = try #require(perLook.range(of: #"<tr data-look="1""#))
        #expect(perLook[row.lowerBound...].contains("(\(correction))"), "\(perLook[row.lowerBound...].prefix(900))")
    }
}
