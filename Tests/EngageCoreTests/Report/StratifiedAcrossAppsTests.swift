import Foundation
import Testing
@testable import EngageCore

/// A report over several apps (`engage report` without `--app`) compares rich with plain within
/// each app's category: one category of two apps can mix rich and plain in different shares and
/// engage at different rates, and pooling the apps would confound the answer (Simpson's
/// paradox by app).
@Suite struct StratifiedAcrossAppsTests {
    /// Within each app rich and plain are expanded alike (10% and 10%, 40% and 40%); app a's
    /// news is mostly rich, app b's mostly plain.
    static let rows = [
        ReportFixture.engagement("news", .rich, "image", app: "a", notifications: 900, delivered: 900, displayed: 900, expanded: 90),
        ReportFixture.engagement("news", .plain, "none", app: "a", notifications: 100, delivered: 100, displayed: 100, expanded: 10),
        ReportFixture.engagement("news", .rich, "image", app: "b", notifications: 100, delivered: 100, displayed: 100, expanded: 40),
        ReportFixture.engagement("news", .plain, "none", app: "b", notifications: 900, delivered: 900, displayed: 900, expanded: 360),
    ]

    static func expansion(_ report: EngagementReport) throws -> StratifiedMetricSummary {
        try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
    }

    @Test func appsAreNotPooledWithinACategory() throws {
        let report = EngagementReport.build(engagement: Self.rows, generatedAt: ReportFixture.generatedAt)
        let summary = try Self.expansion(report)
        let ratio = try #require(summary.riskRatio)
        #expect(abs(ratio.estimate - 1) < 1e-12, "\(summary.headline)")
        #expect(!ratio.isSignificant, "\(summary.headline)")
        #expect(summary.headline.hasPrefix("Adjusted for app and category, "), "\(summary.headline)")
        #expect(summary.categories.map(\.name) == ["a/news", "b/news"])
        // The crude total, which pools apps and categories, says 0.35x: the sentence says they differ.
        #expect(summary.crudeDisagreement?.significance == true)
        #expect(report.renderTable().contains("== ADJUSTED FOR APP AND CATEGORY: rich vs plain within each app's category"))
        #expect(report.renderHTML().contains("<h2>The answer, adjusted for app and category</h2>"))
    }

    @Test func oneAppKeepsItsCategoriesAsTheStrata() throws {
        let report = EngagementReport.build(engagement: Self.rows, filters: ReportFilters(appIDs: ["b"]),
                                            generatedAt: ReportFixture.generatedAt)
        let summary = try Self.expansion(report)
        #expect(summary.categories.map(\.name) == ["news"])
        #expect(summary.headline.hasPrefix("Adjusted for category, "))
    }

    /// With the read model's device moments, each app's category keeps its own devices.
    @Test func eachAppsCategoryKeepsItsOwnDevices() throws {
        func displays(_ shown: Int, _ expanded: Int, rich: Bool) -> FunnelCounts {
            var stages: [FunnelStage: Int] = [.notifications: shown, .delivered: shown, .displayed: shown, .expanded: expanded]
            if rich { stages[.richDisplayed] = shown }
            return FunnelCounts(stages)
        }
        // App a: 30 devices with 30 rich displays (2 or 4 expanded), the first 10 also 10 plain
        // (0 or 2); app b: 30 devices with 30 plain displays (10 or 14), the first 10 also 10 rich
        // (3 or 5). Rich and plain are 10% in a, 40% in b.
        let a = (0..<30).map { j in
            DeviceCategoryCounts(rich: displays(30, j % 2 == 0 ? 2 : 4, rich: true),
                                 plain: j < 10 ? displays(10, j % 2 == 0 ? 0 : 2, rich: false) : FunnelCounts())
        }
        let b = (0..<30).map { j in
            DeviceCategoryCounts(rich: j < 10 ? displays(10, j % 2 == 0 ? 3 : 5, rich: true) : FunnelCounts(),
                                 plain: displays(30, j % 2 == 0 ? 10 : 14, rich: false))
        }
        var rows: [EngagementRow] = []
        for (app, devices) in [("a", a), ("b", b)] {
            let total = devices.reduce(DeviceCategoryCounts(), +)
            rows.append(EngagementRow(appID: app, category: "news", presentation: .rich, attachmentKind: "image",
                                      day: ReportFixture.day1, counts: total.rich))
            rows.append(EngagementRow(appID: app, category: "news", presentation: .plain, attachmentKind: "none",
                                      day: ReportFixture.day1, counts: total.plain))
        }
        let moments = [CategoryDeviceMoments(appID: "a", category: "news", devices: a),
                       CategoryDeviceMoments(appID: "b", category: "news", devices: b)]
        let report = EngagementReport.build(engagement: rows, devices: moments, generatedAt: ReportFixture.generatedAt)
        let summary = try Self.expansion(report)
        #expect(summary.unit == .device)
        #expect(summary.categories.map(\.name) == ["a/news", "b/news"])
        let ratio = try #require(summary.riskRatio)
        #expect(abs(ratio.estimate - 1) < 1e-12 && !ratio.isSignificant, "\(summary.headline)")
        #expect(ratio.interval.width > 0.1, "\(ratio.interval)")
    }
}
