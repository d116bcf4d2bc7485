import EngageCore
import Testing

/// The report with the device as the unit (issue 16 point 4): the fold of per-device counts,
/// the clustered rows and headline, and the coverage of their intervals.
@Suite("Report with the device as the unit")
struct DeviceUnitReportTests {
    static let day = UTCDay(daysSinceEpoch: 20_000)

    static func contribution(_ category: String, _ presentation: ObservedPresentation, _ stages: [FunnelStage]) -> EngagementContribution {
        var counters = EngagementCounts()
        counters.funnel = FunnelCounts(Dictionary(uniqueKeysWithValues: ([.notifications, .displayed] + stages).map { ($0, 1) }))
        return EngagementContribution(bucket: .init(category: category, presentation: presentation, attachmentKind: nil, day: day),
                                      counters: counters)
    }

    /// Notifications that arrive, move between presentations and categories, and leave: the fold's
    /// moments equal those of the devices' final counts, summed from scratch.
    @Test func theFoldEqualsTheMomentsOfTheDevicesFinalCounts() {
        var fold = DeviceMomentFold()
        let a = Self.contribution("news", .rich, [.expanded]), b = Self.contribution("news", .plain, [.opened])
        let c = Self.contribution("chat", .plain, [.expanded, .actioned, .replied])
        fold.apply(appID: "app", from: nil, to: ("d1", a))
        fold.apply(appID: "app", from: nil, to: ("d1", b))
        fold.apply(appID: "app", from: nil, to: ("d2", a))
        fold.apply(appID: "app", from: ("d2", a), to: ("d2", b))          // a late display: rich became plain
        fold.apply(appID: "app", from: nil, to: ("d3", c))
        fold.apply(appID: "app", from: ("d3", c), to: ("d3", Self.contribution("chat", .unknown, [])))
        fold.apply(appID: "app", from: nil, to: ("d2", c))
        let expected = [
            CategoryDeviceMoments(appID: "app", category: "chat", devices: [DeviceCategoryCounts(plain: c.counters.funnel)]),
            CategoryDeviceMoments(appID: "app", category: "news", devices: [
                DeviceCategoryCounts(rich: a.counters.funnel, plain: b.counters.funnel),
                DeviceCategoryCounts(plain: b.counters.funnel),
            ]),
        ]
        #expect(fold.moments == expected)
        let news = fold.moments[1]
        #expect(news.rich[.expansion]!.devices == 1)
        #expect(news.plain[.open]!.devices == 2)
        #expect(news.plain[.open]!.trialsSquared == 2)
        #expect(news.shared[.open]!.firstTrialsSecondSuccesses == 1)
    }

    /// A report built with device moments takes the device as the unit for a category's rows and
    /// the adjusted answer, with the design effect; with a day filter it falls back to notifications.
    @Test func theCategoryRowsAndTheHeadlineUseTheDevicesWhenTheMomentsMatchTheCounts() throws {
        let study = ReportCoverageStudy(devices: 120, notificationsPerDevice: 30)
        let (rows, moments) = study.simulate(seed: 5, dataset: 0)
        let at = Timestamp(microsecondsSinceEpoch: 0)
        let report = EngagementReport.build(engagement: rows, devices: moments, generatedAt: at)
        let expansion = try #require(report.groups.first { $0.key.category == "new_photo" }?.metrics.first)
        #expect(expansion.unit == .device)
        #expect(expansion.ratio?.method == .deviceClustered)
        let designEffect = try #require(expansion.designEffect)
        #expect(designEffect > 1.5, "a strong propensity correlates a device's notifications")
        let naive = EngagementReport.build(engagement: rows, generatedAt: at)
        let naiveExpansion = try #require(naive.groups.first { $0.key.category == "new_photo" }?.metrics.first)
        #expect(naiveExpansion.unit == .notification)
        #expect(naiveExpansion.designEffect == nil)
        let width = { (interval: ConfidenceInterval?) in (interval?.upper ?? 0) - (interval?.lower ?? 0) }
        #expect(width(expansion.absoluteInterval) > width(naiveExpansion.absoluteInterval))

        let headline = try #require(report.stratified.first)
        #expect(headline.unit == .device)
        #expect(headline.riskRatio?.method == .mantelHaenszelDeviceClustered)
        #expect(try #require(headline.designEffect).riskDifference > 1.5)
        #expect(headline.headline.contains("devices as the unit, design effect"))
        #expect(naive.stratified.first?.unit == .notification)

        // The moments span every day: a day filter leaves notifications as the unit.
        let filtered = EngagementReport.build(engagement: rows, devices: moments,
                                              filters: ReportFilters(from: Self.day), generatedAt: at)
        #expect(filtered.stratified.first?.unit == .notification)
        // Moments that do not add up to the counts are not used.
        var wrong = moments
        wrong[0].rich[.expansion] = DeviceMoments()
        let mismatched = EngagementReport.build(engagement: rows, devices: wrong, generatedAt: at)
        #expect(mismatched.groups.first { $0.key.category == wrong[0].category }?.metrics.first?.unit == .notification)
        #expect(mismatched.stratified.first?.unit == .notification)
    }

    /// Over simulated datasets with a strong per-device propensity (log-odds spread 1.5, about 10
    /// notifications per device and category, a device's notifications leaning to rich or to
    /// plain with its network), the categories' device-clustered 95% intervals cover the truth (a
    /// 99% Clopper-Pearson upper bound of their coverage at or above 93%), and the naive intervals,
    /// measured the same way, do not (upper bound below 93% for the metrics whose design effect is
    /// large). The adjusted figures with the device as the unit cover more often than the naive
    /// ones, but not always 93%: a device's notifications in two categories are correlated and
    /// the read model keeps no cross-category sums (docs/report.md, "The device as the unit").
    /// `engage bench report-coverage` runs the same study at 1,000 datasets (BENCHMARKS.md).
    @Test func deviceIntervalsCoverTheTruthAndNaiveOnesDoNot() {
        let results = ReportCoverageStudy(devices: 200, notificationsPerDevice: 40).run(datasets: 60, seed: 16)
        for result in results {
            for (name, coverage) in [("difference", result.deviceDifference), ("ratio", result.deviceRatio)] {
                #expect(coverage.intervals >= 60)
                #expect(coverage.proportion.clopperPearsonUpperBound(confidence: 0.99) >= 0.93,
                        "\(result.metric) \(name): \(coverage.covered) of \(coverage.intervals)")
            }
            #expect(result.deviceAdjustedDifference.covered >= result.naiveAdjustedDifference.covered)
            #expect(result.deviceAdjustedRatio.covered >= result.naiveAdjustedRatio.covered)
        }
        for metric in [EngagementMetric.expansion, .open] {
            let result = results.first { $0.metric == metric }!
            #expect(result.meanDesignEffect > 2)
            #expect(result.naiveDifference.proportion.clopperPearsonUpperBound(confidence: 0.99) < 0.93,
                    "\(metric) naive: \(result.naiveDifference.covered) of \(result.naiveDifference.intervals)")
        }
    }
}
