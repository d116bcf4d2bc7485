import Foundation
import Testing
@testable import EngageCore

/// The headline says when its data are too few, in every rendering: a significant adjusted
/// ratio from a handful of notifications must not read like a finding.
@Suite struct StratifiedSmallSampleTests {
    /// One category: rich 3 of 3 expanded, plain 1 of 10. The adjusted ratio, 10x [1.56, 64.2],
    /// is significant, yet a side has fewer than 30 displays and fewer than 5 successes.
    static func tinyReport() -> EngagementReport {
        let rows = [
            ReportFixture.engagement("news", .rich, "image", notifications: 3, delivered: 3, displayed: 3, expanded: 3),
            ReportFixture.engagement("news", .plain, "none", notifications: 10, delivered: 10, displayed: 10, expanded: 1),
        ]
        return EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
    }

    /// How the headline says it.
    static let words = "Small sample:"

    /// `stratified[expansion].small_sample` of the JSON.
    static func smallSampleInJSON(_ report: EngagementReport) throws -> Bool? {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.renderJSON())) as? [String: Any])
        let stratified = try #require(json["stratified"] as? [[String: Any]])
        return stratified.first { $0["metric"] as? String == "expansion" }?["small_sample"] as? Bool
    }

    static func expansion(_ report: EngagementReport) throws -> StratifiedMetricSummary {
        try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
    }

    @Test func aSignificantRatioFromFewNotificationsSaysSmallSample() throws {
        let report = Self.tinyReport()
        let summary = try Self.expansion(report)
        let ratio = try #require(summary.riskRatio)
        #expect(ratio.isSignificant, "the case this test is about: \(ratio.interval)")
        #expect(summary.headline.contains(Self.words), "\(summary.headline)")

        // The table, the page, the JSON and the CSV say it too.
        #expect(report.renderTable().replacing("\n  ", with: " ").contains(Self.words))
        let page = report.renderHTML()
        let adjusted = try #require(page.firstRange(of: "<section class=\"adjusted\">"))
        let end = try #require(page[adjusted.upperBound...].firstRange(of: "</section>"))
        #expect(page[adjusted.upperBound..<end.lowerBound].contains(HTMLText.escape(Self.words)))
        #expect(try Self.smallSampleInJSON(report) == true)
        let csvRows = report.renderCSV().split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let column = try #require(EngagementReport.csvHeader.firstIndex(of: "small_sample"))
        let figure = try #require(EngagementReport.csvHeader.firstIndex(of: "figure"))
        let riskRatioRow = try #require(csvRows.first { $0[0] == "stratified" && $0[4] == "expansion" && $0[figure] == "risk_ratio" })
        #expect(riskRatioRow[column] == "true")
    }

    @Test func enoughNotificationsSayNothingOfTheKind() throws {
        let rows = [
            ReportFixture.engagement("news", .rich, "image", notifications: 400, delivered: 400, displayed: 400, expanded: 120),
            ReportFixture.engagement("news", .plain, "none", notifications: 400, delivered: 400, displayed: 400, expanded: 80),
            ReportFixture.engagement("promo", .rich, "image", notifications: 300, delivered: 300, displayed: 300, expanded: 40),
            ReportFixture.engagement("promo", .plain, "none", notifications: 300, delivered: 300, displayed: 300, expanded: 30),
        ]
        let report = EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
        let summary = try Self.expansion(report)
        #expect(!summary.headline.contains(Self.words))
        #expect(try Self.smallSampleInJSON(report) == false)
        // A category too small on its own does not make the summary small: the pooled counts do.
        let withSmallCategory = EngagementReport.build(
            engagement: rows + [
                ReportFixture.engagement("rare", .rich, "image", notifications: 2, delivered: 2, displayed: 2, expanded: 1),
                ReportFixture.engagement("rare", .plain, "none", notifications: 2, delivered: 2, displayed: 2, expanded: 1),
            ], generatedAt: ReportFixture.generatedAt)
        #expect(try !Self.expansion(withSmallCategory).headline.contains(Self.words))
        #expect(try Self.smallSampleInJSON(withSmallCategory) == false)
    }

    /// Many notifications from three devices: the counts pass the rule, the devices do not. The
    /// clustered variance rests on three observations, and its interval claims much.
    @Test func manyNotificationsFromFewDevicesSaySmallSample() throws {
        func displays(_ shown: Int, _ expanded: Int, rich: Bool) -> FunnelCounts {
            var stages: [FunnelStage: Int] = [.notifications: shown, .delivered: shown, .displayed: shown, .expanded: expanded]
            if rich { stages[.richDisplayed] = shown }
            return FunnelCounts(stages)
        }
        let devices = [(100, 61, 100, 20), (100, 58, 100, 21), (100, 60, 100, 19)].map { device in
            DeviceCategoryCounts(rich: displays(device.0, device.1, rich: true), plain: displays(device.2, device.3, rich: false))
        }
        let total = devices.reduce(DeviceCategoryCounts(), +)
        let rows = [
            EngagementRow(appID: "app", category: "news", presentation: .rich, attachmentKind: "image",
                          day: ReportFixture.day1, counts: total.rich),
            EngagementRow(appID: "app", category: "news", presentation: .plain, attachmentKind: "none",
                          day: ReportFixture.day1, counts: total.plain),
        ]
        let report = EngagementReport.build(engagement: rows, devices: [CategoryDeviceMoments(appID: "app", category: "news", devices: devices)],
                                            generatedAt: ReportFixture.generatedAt)
        let summary = try Self.expansion(report)
        #expect(summary.unit == .device)
        #expect(summary.headline.contains(Self.words), "\(summary.headline)")
        #expect(try Self.smallSampleInJSON(report) == true)
    }
}
