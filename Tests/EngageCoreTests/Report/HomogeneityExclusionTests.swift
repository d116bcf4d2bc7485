import Testing
@testable import EngageCore

/// Categories the heterogeneity check (Cochran's Q across categories) leaves out are named with
/// their reason wherever the check appears: the headline (text, HTML, JSON, CSV), the JSON's
/// `homogeneity.excluded` and the CSV's `homogeneity_excluded` rows.
@Suite("Report: categories left out of Cochran's Q")
struct HomogeneityExclusionTests {
    static let day = UTCDay(daysSinceEpoch: 20_000)
    static let words = "Left out of Cochran's Q: promo (a side with no successes or only successes)."

    static func displays(shown: Int, expanded: Int, rich: Bool) -> FunnelCounts {
        var stages: [FunnelStage: Int] = [.notifications: shown, .delivered: shown, .displayed: shown, .expanded: expanded]
        if rich { stages[.richDisplayed] = shown }
        return FunnelCounts(stages)
    }

    /// Three categories with the device as the unit; no plain notification of `promo` was
    /// expanded, so the device-clustered Q leaves it out (its log rate is undefined), while the
    /// Mantel-Haenszel figures keep it.
    static func data() -> (rows: [EngagementRow], moments: [CategoryDeviceMoments]) {
        var rows: [EngagementRow] = []
        var moments: [CategoryDeviceMoments] = []
        for (category, plainShare) in [("news", 1), ("chat", 2), ("promo", 0)] {
            let devices = (0..<40).flatMap { j in
                [DeviceCategoryCounts(rich: displays(shown: 4, expanded: j % 4, rich: true)),
                 DeviceCategoryCounts(plain: displays(shown: 4, expanded: plainShare == 0 ? 0 : (j % 3 == 0 ? plainShare : 0), rich: false))]
            }
            let total = devices.reduce(DeviceCategoryCounts(), +)
            for (presentation, funnel) in [(ObservedPresentation.rich, total.rich), (.plain, total.plain)] {
                rows.append(EngagementRow(appID: "app", category: category, presentation: presentation,
                                          attachmentKind: presentation == .rich ? "image" : "none", day: day, counts: funnel))
            }
            moments.append(CategoryDeviceMoments(appID: "app", category: category, devices: devices))
        }
        return (rows, moments)
    }

    static func report() -> EngagementReport {
        let (rows, moments) = data()
        return EngagementReport.build(engagement: rows, devices: moments, generatedAt: Timestamp(microsecondsSinceEpoch: 0))
    }

    @Test func theLeftOutCategoryIsNamedInEveryRendering() throws {
        let report = Self.report()
        let summary = try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
        #expect(summary.unit == .device)
        let homogeneity = try #require(summary.homogeneity)
        #expect(homogeneity.excluded == [ExcludedStratum(name: "promo", reason: .zeroCell)])
        #expect(summary.excluded.isEmpty, "promo is in the Mantel-Haenszel figures")

        #expect(summary.headline.contains(" " + Self.words))
        #expect(ReportRenderingTests.collapsed(report.renderTable()).contains(Self.words))
        #expect(report.renderHTML().contains(HTMLText.escape(Self.words)))

        let json = try JSON.parse(report.renderJSON())
        let stratified = Array(json.elements(try #require(json.member(json.root, "stratified"))))
        let first = try #require(stratified.first { json.string(json.member($0, "metric")!) == "expansion" })
        let homogeneityNode = try #require(json.member(first, "homogeneity"))
        let excluded = Array(json.elements(try #require(json.member(homogeneityNode, "excluded"))))
        #expect(excluded.count == 1)
        #expect(excluded.first.flatMap { json.member($0, "category") }.flatMap { json.string($0) } == "promo")
        #expect(excluded.first.flatMap { json.member($0, "reason") }.flatMap { json.string($0) } == "zero_cell")

        let csv = ReportRenderingTests.parseCSV(report.renderCSV())
        let figure = EngagementReport.csvHeader.firstIndex(of: "figure")!
        let value = EngagementReport.csvHeader.firstIndex(of: "value")!
        #expect(csv.filter { $0[0] == "stratified" && $0[4] == "expansion" && $0[figure] == "homogeneity_excluded" }
            .map { [$0[1], $0[value]] } == [["promo", "zero_cell"]])
    }

    /// With the notification as the unit Cochran's Q keeps every category (a zero cell gets 0.5
    /// added): nothing is said.
    @Test func nothingIsSaidWhenNoCategoryIsLeftOut() throws {
        let naive = EngagementReport.build(engagement: Self.data().rows, generatedAt: Timestamp(microsecondsSinceEpoch: 0))
        let summary = try #require(naive.stratified.first { $0.metric == .engagement(.expansion) })
        #expect(summary.unit == .notification)
        #expect(summary.homogeneity?.excluded == [])
        #expect(!summary.headline.contains("Left out of Cochran's Q"))
    }
}
