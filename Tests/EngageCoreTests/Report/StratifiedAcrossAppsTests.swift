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
    }

    @Test func oneAppKeepsItsCategoriesAsTheStrata() throws {
        let report = EngagementReport.build(engagement: Self.rows, filters: ReportFilters(appIDs: ["b"]),
                                            generatedAt: ReportFixture.generatedAt)
        let summary = try Self.expansion(report)
        #expect(summary.categories.map(\.name) == ["news"])
        #expect(summary.headline.hasPrefix("Adjusted for category, "))
    }
}
