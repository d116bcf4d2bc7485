import Foundation
import Testing
@testable import EngageCore

/// The crude total against the adjusted figure: a difference is laid on the categories' mix
/// (Simpson's paradox) only where the mix can cause it. With the device as the adjusted figure's
/// unit, the crude interval (every notification independent) is narrower, and a difference in
/// significance alone comes from that too; with one category there is no mix at all.
@Suite struct CrudeDisagreementCauseTests {
    static let day = UTCDay(daysSinceEpoch: 20_000)
    static let at = Timestamp(microsecondsSinceEpoch: 0)

    static func displays(shown: Int, expanded: Int, rich: Bool) -> FunnelCounts {
        var stages: [FunnelStage: Int] = [.notifications: shown, .delivered: shown, .displayed: shown, .expanded: expanded]
        if rich { stages[.richDisplayed] = shown }
        return FunnelCounts(stages)
    }

    /// Each category: 20 devices a side with 200 displays each, half expanding almost never and
    /// half almost always (rich 10% or 100%, plain 0% or 90%): 55% against 45% of 4,000
    /// notifications a side, far apart, but from 20 devices a side that differ widely.
    static func report(categories: [String]) -> EngagementReport {
        var rows: [EngagementRow] = []
        var moments: [CategoryDeviceMoments] = []
        for category in categories {
            var devices: [DeviceCategoryCounts] = []
            for j in 0..<20 {
                devices.append(DeviceCategoryCounts(rich: displays(shown: 200, expanded: j % 2 == 0 ? 20 : 200, rich: true)))
                devices.append(DeviceCategoryCounts(plain: displays(shown: 200, expanded: j % 2 == 0 ? 0 : 180, rich: false)))
            }
            let total = devices.reduce(DeviceCategoryCounts(), +)
            rows += [(ObservedPresentation.rich, total.rich), (.plain, total.plain)].map { presentation, funnel in
                EngagementRow(appID: "app", category: category, presentation: presentation,
                              attachmentKind: presentation == .rich ? "image" : "none", day: day, counts: funnel)
            }
            moments.append(CategoryDeviceMoments(appID: "app", category: category, devices: devices))
        }
        return EngagementReport.build(engagement: rows, devices: moments, generatedAt: at)
    }

    static func expansion(_ report: EngagementReport) throws -> StratifiedMetricSummary {
        try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
    }

    @Test func oneCategoryHasNoMixToBlame() throws {
        let summary = try Self.expansion(Self.report(categories: ["news"]))
        #expect(summary.unit == .device)
        let crude = try #require(summary.crude), adjusted = try #require(summary.riskRatio)
        // The premise: the same estimate, significant with notifications as the unit only.
        #expect(abs(crude.estimate - adjusted.estimate) < 1e-9)
        #expect(crude.isSignificant && !adjusted.isSignificant, "crude \(crude.interval), adjusted \(adjusted.interval)")
        #expect(summary.crudeDisagreement == nil)
        #expect(summary.crudeWarning == nil)
        #expect(!summary.headline.contains("Simpson"), "\(summary.headline)")
        #expect(ReportFormat.disagreement(summary) == ReportFormat.missing)
    }

    @Test func aDifferenceInSignificanceWithDevicesAsTheUnitNamesTheUnit() throws {
        let summary = try Self.expansion(Self.report(categories: ["news", "chat"]))
        #expect(summary.unit == .device)
        let disagreement = try #require(summary.crudeDisagreement)
        #expect(disagreement.significance && !disagreement.direction)
        let warning = try #require(summary.crudeWarning)
        #expect(!warning.contains("Simpson"), "\(warning)")
        #expect(warning.contains("counts every notification as independent, where the adjusted figure counts each device once"),
                "\(warning)")
        #expect(ReportFormat.disagreement(summary) == "SIGNIFICANCE differs")
    }

    /// A category left out for having no displays at all adds nothing to the crude total: still
    /// nothing pooled. One left out for having rich displays only is in the crude: compared.
    @Test func aLeftOutCategoryCountsOnlyWhenTheCrudeHoldsIt() throws {
        let news = [ReportFixture.engagement("news", .rich, "image", notifications: 300, delivered: 300, displayed: 300, expanded: 90),
                    ReportFixture.engagement("news", .plain, "none", notifications: 300, delivered: 300, displayed: 300, expanded: 60)]
        let silent = ReportFixture.engagement("silent", .plain, "none", notifications: 50, delivered: 50, displayed: 0)
        let richOnly = ReportFixture.engagement("promo", .rich, "image", notifications: 100, delivered: 100, displayed: 100, expanded: 5)
        let withSilent = try Self.expansion(EngagementReport.build(engagement: news + [silent], generatedAt: Self.at))
        #expect(withSilent.excluded.map(\.name) == ["silent"])
        #expect(!withSilent.poolsALeftOutCategory)
        #expect(withSilent.crudeDisagreement == nil)
        #expect(ReportFormat.disagreement(withSilent) == ReportFormat.missing)
        let withPromo = try Self.expansion(EngagementReport.build(engagement: news + [richOnly], generatedAt: Self.at))
        #expect(withPromo.poolsALeftOutCategory)
        #expect(ReportFormat.disagreement(withPromo) != ReportFormat.missing)
    }

    static func rows(_ counts: [(String, rich: (Int, Int), plain: (Int, Int))]) -> [EngagementRow] {
        counts.flatMap { category, rich, plain in
            [ReportFixture.engagement(category, .rich, "image", notifications: rich.1, delivered: rich.1, displayed: rich.1, expanded: rich.0),
             ReportFixture.engagement(category, .plain, "none", notifications: plain.1, delivered: plain.1, displayed: plain.1, expanded: plain.0)]
        }
    }

    /// Rich and plain spread over the categories alike (100 a side in each): crude and adjusted
    /// estimates are equal, and a difference in significance is the intervals' alone, which the
    /// warning must not lay on a mix that does not differ.
    @Test func theSameMixIsNoSimpsonsParadox() throws {
        let summary = try Self.expansion(EngagementReport.build(
            engagement: Self.rows([("a", rich: (4, 100), plain: (5, 100)), ("b", rich: (71, 100), plain: (84, 100))]), generatedAt: Self.at))
        let crude = try #require(summary.crude), adjusted = try #require(summary.riskRatio)
        #expect(abs(crude.estimate - adjusted.estimate) < 1e-9)
        #expect(!crude.isSignificant && adjusted.isSignificant, "crude \(crude.interval), adjusted \(adjusted.interval)")
        let warning = try #require(summary.crudeWarning)
        #expect(!warning.contains("Simpson") && !warning.contains("different mixes"), "\(warning)")
        #expect(warning.contains("the same mix of categories"), "\(warning)")

        // The mix differing (most of b's notifications plain), the same rates: the mix is named.
        let mixed = try Self.expansion(EngagementReport.build(
            engagement: Self.rows([("a", rich: (8, 200), plain: (1, 20)), ("b", rich: (14, 20), plain: (168, 200))]), generatedAt: Self.at))
        #expect(mixed.mixDiffers)
        #expect(mixed.crudeWarning?.contains("Simpson's paradox") == true, "\(mixed.crudeWarning ?? "none")")

        // Two compared categories alike, and one with rich displays only, left out of the
        // adjusted figure but in the crude total: that is a mix that differs.
        var rows = Self.rows([("a", rich: (50, 500), plain: (42, 500)), ("b", rich: (50, 500), plain: (42, 500))])
        rows.append(ReportFixture.engagement("c", .rich, "image", notifications: 2000, delivered: 2000, displayed: 2000, expanded: 400))
        let leftOut = try Self.expansion(EngagementReport.build(engagement: rows, generatedAt: Self.at))
        #expect(leftOut.excluded.map(\.name) == ["c"])
        #expect(leftOut.crudeWarning?.contains("Simpson's paradox") == true, "\(leftOut.crudeWarning ?? "none")")
    }

    /// A category with rich successes and no plain ones has no ratio, yet Cochran's Q takes it in
    /// (notifications as the unit): when it is what makes the categories disagree, the words name
    /// it, and it points up whatever the summary says.
    @Test func aCategoryWithoutPlainSuccessesIsNamed() throws {
        let upBeside = try Self.expansion(EngagementReport.build(
            engagement: Self.rows([("a", rich: (60, 400), plain: (60, 400)), ("b", rich: (15, 100), plain: (0, 100))]), generatedAt: Self.at))
        #expect(upBeside.categoriesDisagree)
        #expect(upBeside.categoryWords?.contains("b (no plain successes, 15 of 100 rich)") == true, "\(upBeside.headline)")

        let otherWay = try Self.expansion(EngagementReport.build(
            engagement: Self.rows([("a", rich: (30, 300), plain: (60, 300)), ("b", rich: (12, 60), plain: (0, 60))]), generatedAt: Self.at))
        #expect(otherWay.categoriesDisagree)
        #expect(otherWay.pointingTheOtherWay == ["b"])
        #expect(otherWay.categoryWords?.contains("b (no plain successes, 12 of 60 rich)") == true, "\(otherWay.headline)")
    }
}
