import Testing
@testable import EngageCore

/// The device-clustered figures cost the square of the categories in memory and their cube in
/// time: an app whose devices sent 100,000 category names made one report take hundreds of
/// gigabytes. Past `maximumClusteredCategories` the report counts notifications as the unit.
@Suite("Report: the device as the unit, up to a number of categories")
struct ClusteredCategoryLimitTests {
    static func report(categories: Int) -> EngagementReport {
        var rows: [EngagementRow] = []
        var moments: [CategoryDeviceMoments] = []
        for index in 0..<categories {
            let category = "c\(index)"
            let devices = (0..<6).flatMap { j in
                [DeviceCategoryCounts(rich: HomogeneityExclusionTests.displays(shown: 3, expanded: j % 3, rich: true)),
                 DeviceCategoryCounts(plain: HomogeneityExclusionTests.displays(shown: 3, expanded: j % 2, rich: false))]
            }
            let total = devices.reduce(DeviceCategoryCounts(), +)
            for (presentation, funnel) in [(ObservedPresentation.rich, total.rich), (.plain, total.plain)] {
                rows.append(EngagementRow(appID: "app", category: category, presentation: presentation,
                                          attachmentKind: presentation == .rich ? "image" : "none",
                                          day: HomogeneityExclusionTests.day, counts: funnel))
            }
            moments.append(CategoryDeviceMoments(appID: "app", category: category, devices: devices))
        }
        return EngagementReport.build(engagement: rows, devices: moments, generatedAt: Timestamp(microsecondsSinceEpoch: 0))
    }

    @Test func pastTheLimitNotificationsAreTheUnit() throws {
        let few = try #require(Self.report(categories: 3).stratified.first { $0.metric == .engagement(.expansion) })
        #expect(few.unit == .device)
        let many = Self.report(categories: StratifiedMetricSummary.maximumClusteredCategories + 1)
        let summary = try #require(many.stratified.first { $0.metric == .engagement(.expansion) })
        #expect(summary.unit == .notification)
        #expect(summary.riskRatio != nil)
    }
}
