import EngageCore
import Testing

/// The reason the adjusted answer gives for a variance of 0 must be the cause in the data: with
/// the device as the unit the variance is 0 whenever every device has its group's rate, which
/// need not be 0 or 1.
@Suite("Report: the reason for a variance of 0")
struct ZeroVarianceReasonTests {
    static let day = UTCDay(daysSinceEpoch: 20_000)

    /// One device's displayed notifications of one category: `shown` displays of which `expanded` expanded.
    static func displays(shown: Int, expanded: Int, rich: Bool) -> FunnelCounts {
        var stages: [FunnelStage: Int] = [.notifications: shown, .delivered: shown, .displayed: shown, .expanded: expanded]
        if rich { stages[.richDisplayed] = shown }
        return FunnelCounts(stages)
    }

    /// The expansion summary of a report over categories whose devices each got `shown` rich or
    /// plain displays (never both) with the given number expanded; `withDevices` false leaves the
    /// notification as the unit.
    static func expansionSummary(devicesPerSide: Int, shown: Int, richExpanded: Int, plainExpanded: Int,
                                 categories: [String] = ["news", "chat"], withDevices: Bool = true) throws -> StratifiedMetricSummary {
        var rows: [EngagementRow] = []
        var moments: [CategoryDeviceMoments] = []
        for category in categories {
            let devices = (0..<devicesPerSide).flatMap { _ in
                [DeviceCategoryCounts(rich: displays(shown: shown, expanded: richExpanded, rich: true)),
                 DeviceCategoryCounts(plain: displays(shown: shown, expanded: plainExpanded, rich: false))]
            }
            let total = devices.reduce(DeviceCategoryCounts(), +)
            for (presentation, funnel) in [(ObservedPresentation.rich, total.rich), (.plain, total.plain)] {
                rows.append(EngagementRow(appID: "app", category: category, presentation: presentation,
                                          attachmentKind: presentation == .rich ? "image" : "none", day: day, counts: funnel))
            }
            moments.append(CategoryDeviceMoments(appID: "app", category: category, devices: devices))
        }
        let report = EngagementReport.build(engagement: rows, devices: withDevices ? moments : [],
                                            generatedAt: Timestamp(microsecondsSinceEpoch: 0))
        return try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
    }

    /// Every device expands half its rich and a quarter of its plain notifications: rates of 0.5
    /// and 0.25, yet no variation between devices, so the clustered variances are 0. The reason
    /// must say so, not "every rate 0 or 1".
    @Test func devicesAllAtTheirGroupsRateBetweenZeroAndOne() throws {
        let summary = try Self.expansionSummary(devicesPerSide: 40, shown: 4, richExpanded: 2, plainExpanded: 1)
        #expect(summary.unit == .device)
        #expect(summary.riskRatio == nil)
        #expect(summary.riskDifference == nil)
        #expect(summary.cochranMantelHaenszel != nil, "the CMH test takes the counts, which vary")
        #expect(summary.unavailable == "not enough data for "
            + "risk ratio: no variation between devices (every device has its group's rate); "
            + "risk difference: no variation between devices (every device has its group's rate); "
            + "homogeneity: no variation between devices to compare categories by "
            + "(their clustered covariance is singular, as when every device has its group's rate)")
    }

    /// The same where the rates are not exact in binary (0.2 and 0.1, 0.3 and 0.1): the sums cancel
    /// to rounding, which is no variation either, not a variance of 1e-21 and a p-value of 0.
    @Test(arguments: [(2, 1), (3, 1)])
    func devicesAllAtRatesNotExactInBinary(rich: Int, plain: Int) throws {
        let summary = try Self.expansionSummary(devicesPerSide: 1_000, shown: 10, richExpanded: rich, plainExpanded: plain)
        #expect(summary.unit == .device)
        #expect(summary.riskRatio == nil, "\(String(describing: summary.riskRatio))")
        #expect(summary.riskDifference == nil, "\(String(describing: summary.riskDifference))")
        #expect(summary.unavailable?.contains("no variation between devices (every device has its group's rate)") == true,
                "\(summary.unavailable ?? "")")
    }

    /// Devices seen both rich and plain, every one at its group's rates (0.7 and 0.1, not exact in
    /// binary): the covariance between the groups cancels to rounding too, which is no variation,
    /// not a variance of 1e-19 and a p-value of 0.
    @Test func devicesSeenBothWaysAllAtTheirGroupsRates() throws {
        var rows: [EngagementRow] = []
        var moments: [CategoryDeviceMoments] = []
        for category in ["news", "chat"] {
            let devices = [DeviceCategoryCounts(rich: Self.displays(shown: 10, expanded: 7, rich: true),
                                                plain: Self.displays(shown: 10, expanded: 1, rich: false))]
                + (0..<29).map { _ in
                    DeviceCategoryCounts(rich: Self.displays(shown: 20, expanded: 14, rich: true),
                                         plain: Self.displays(shown: 20, expanded: 2, rich: false))
                }
            let total = devices.reduce(DeviceCategoryCounts(), +)
            for (presentation, funnel) in [(ObservedPresentation.rich, total.rich), (.plain, total.plain)] {
                rows.append(EngagementRow(appID: "app", category: category, presentation: presentation,
                                          attachmentKind: presentation == .rich ? "image" : "none", day: Self.day, counts: funnel))
            }
            moments.append(CategoryDeviceMoments(appID: "app", category: category, devices: devices))
        }
        let report = EngagementReport.build(engagement: rows, devices: moments, generatedAt: Timestamp(microsecondsSinceEpoch: 0))
        let summary = try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
        #expect(summary.unit == .device)
        #expect(summary.riskRatio == nil, "\(String(describing: summary.riskRatio))")
        #expect(summary.riskDifference == nil, "\(String(describing: summary.riskDifference))")
    }

    /// Every notification expanded, rich and plain: every rate is 1, and that is the reason,
    /// with the device as the unit and without.
    @Test func everyRateOneIsNamedAsSuch() throws {
        for withDevices in [true, false] {
            let summary = try Self.expansionSummary(devicesPerSide: 40, shown: 3, richExpanded: 3, plainExpanded: 3,
                                                    categories: ["news"], withDevices: withDevices)
            #expect(summary.unit == (withDevices ? .device : .notification))
            #expect(summary.unavailable == "not enough data for risk ratio: no variation (every rate 0 or 1); "
                + "risk difference: no variation (every rate 0 or 1); CMH test: no variation (every rate 0 or 1)")
        }
    }
}
