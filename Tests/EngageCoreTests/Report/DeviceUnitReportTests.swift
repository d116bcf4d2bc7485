@testable import EngageCore
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

        // d2 is the only device left with notifications in both categories.
        let pairs = fold.pairMoments
        #expect(pairs == [CategoryPairDeviceMoments(appID: "app", first: "chat", second: "news", devices: [
            (first: DeviceCategoryCounts(plain: c.counters.funnel), second: DeviceCategoryCounts(plain: b.counters.funnel)),
        ])])
        #expect(pairs.first?.cross[.open]?.plainPlain.firstTrialsSecondSuccesses == 1)
        #expect(pairs.first?.cross[.open]?.plainPlain.successesProduct == 0)
        #expect(pairs.first?.cross[.open]?.richPlain == DeviceCrossMoments())
    }

    /// One device's displayed notifications of one category: `shown` displays of which `expanded` expanded.
    static func displays(shown: Int, expanded: Int, rich: Bool) -> FunnelCounts {
        var stages: [FunnelStage: Int] = [.notifications: shown, .delivered: shown, .displayed: shown, .expanded: expanded]
        if rich { stages[.richDisplayed] = shown }
        return FunnelCounts(stages)
    }

    /// With the categories' pair moments the Mantel-Haenszel risk difference's variance is the
    /// cluster-robust sandwich over devices of its linearisation, each device's contributions
    /// to every category summed before squaring, computed here device by device from the counts.
    @Test func theAdjustedVarianceCountsADeviceOnceAcrossCategories() throws {
        // Per device, per category: rich displays and expansions, plain displays and expansions.
        let devices: [[(Int, Int, Int, Int)]] = [
            [(3, 2, 1, 1), (2, 2, 0, 0)], [(0, 0, 4, 1), (1, 0, 3, 0)], [(5, 4, 2, 2), (4, 3, 1, 1)],
            [(1, 0, 0, 0), (0, 0, 5, 1)], [(2, 1, 3, 0), (3, 1, 2, 1)], [(4, 1, 1, 0), (0, 0, 0, 0)],
            [(0, 0, 2, 0), (1, 1, 2, 0)],
        ]
        let names = ["a", "b"]
        var counts: [DeviceMomentFold.Key: DeviceCategoryCounts] = [:]
        for (j, device) in devices.enumerated() {
            for (k, cell) in device.enumerated() where cell.0 + cell.2 > 0 {
                counts[DeviceMomentFold.Key(appID: "app", category: names[k], deviceID: "d\(j)")] = DeviceCategoryCounts(
                    rich: Self.displays(shown: cell.0, expanded: cell.1, rich: true),
                    plain: Self.displays(shown: cell.2, expanded: cell.3, rich: false))
            }
        }
        var rows: [EngagementRow] = []
        var moments: [CategoryDeviceMoments] = []
        for name in names {
            let category = counts.filter { $0.key.category == name }.map(\.value)
            let total = category.reduce(DeviceCategoryCounts(), +)
            for (presentation, funnel) in [(ObservedPresentation.rich, total.rich), (.plain, total.plain)] {
                rows.append(EngagementRow(appID: "app", category: name, presentation: presentation,
                                          attachmentKind: presentation == .rich ? "image" : "none", day: Self.day, counts: funnel))
            }
            moments.append(CategoryDeviceMoments(appID: "app", category: name, devices: category))
        }
        let pairs = CategoryPairDeviceMoments.pairs(of: counts)
        #expect(pairs.count == 1)

        // The linearisation sum_k w_k / W (p1_k - p2_k), device by device.
        let sums = names.indices.map { k in
            devices.reduce((0.0, 0.0, 0.0, 0.0)) { sum, device in
                (sum.0 + Double(device[k].0), sum.1 + Double(device[k].1), sum.2 + Double(device[k].2), sum.3 + Double(device[k].3))
            }
        }
        let weights = sums.map { $0.0 * $0.2 / ($0.0 + $0.2) }
        let totalWeight = weights.reduce(0, +)
        let estimate = names.indices.map { weights[$0] * (sums[$0].1 / sums[$0].0 - sums[$0].3 / sums[$0].2) }.reduce(0, +) / totalWeight
        let variance = devices.map { device in
            let contribution = names.indices.map { k in
                let (n1, x1, n2, x2) = sums[k]
                let rich = (Double(device[k].1) - x1 / n1 * Double(device[k].0)) / n1
                let plain = (Double(device[k].3) - x2 / n2 * Double(device[k].2)) / n2
                return weights[k] / totalWeight * (rich - plain)
            }.reduce(0, +)
            return contribution * contribution
        }.reduce(0, +)

        let at = Timestamp(microsecondsSinceEpoch: 0)
        func difference(_ report: EngagementReport) throws -> EffectEstimate {
            let summary = try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
            #expect(summary.unit == .device)
            return try #require(summary.riskDifference)
        }
        let together = try difference(EngagementReport.build(engagement: rows, devices: moments, devicePairs: pairs, generatedAt: at))
        let halfWidth = (together.interval.upper - together.interval.lower) / 2
        #expect(abs(together.estimate - estimate) < 1e-12)
        #expect(abs(halfWidth - 1.959963984540054 * variance.squareRoot()) < 1e-9 * halfWidth)
        // Each category's devices taken apart: the covariance of the categories is left out.
        let apart = try difference(EngagementReport.build(engagement: rows, devices: moments, generatedAt: at))
        #expect(abs((apart.interval.upper - apart.interval.lower) / 2 - halfWidth) > 1e-6)
    }

    /// Many notifications from a few devices are a small sample when the device is the unit: the
    /// clustered variance has only the devices to go on. With every device contributing as many
    /// notifications, enough devices make the same row an ordinary one.
    @Test func fewDevicesMakeASmallSampleHoweverManyNotifications() throws {
        func expansion(devicesPerSide: Int, displaysPerDevice: Int) throws -> (devices: MetricComparison, naive: MetricComparison) {
            var counts: [DeviceCategoryCounts] = []
            for j in 0..<devicesPerSide {
                let expanded = (j % 4 + 1) * displaysPerDevice / 8
                counts.append(DeviceCategoryCounts(rich: Self.displays(shown: displaysPerDevice, expanded: expanded, rich: true)))
                counts.append(DeviceCategoryCounts(plain: Self.displays(shown: displaysPerDevice, expanded: expanded / 2, rich: false)))
            }
            let total = counts.reduce(DeviceCategoryCounts(), +)
            let rows = [(ObservedPresentation.rich, total.rich), (.plain, total.plain)].map { presentation, funnel in
                EngagementRow(appID: "app", category: "news", presentation: presentation,
                              attachmentKind: presentation == .rich ? "image" : "none", day: Self.day, counts: funnel)
            }
            let moments = [CategoryDeviceMoments(appID: "app", category: "news", devices: counts)]
            let at = Timestamp(microsecondsSinceEpoch: 0)
            func first(_ report: EngagementReport) throws -> MetricComparison {
                try #require(report.groups.first { $0.key.category == "news" }?.metrics.first { $0.metric == .engagement(.expansion) })
            }
            return (try first(EngagementReport.build(engagement: rows, devices: moments, generatedAt: at)),
                    try first(EngagementReport.build(engagement: rows, generatedAt: at)))
        }
        let few = try expansion(devicesPerSide: 8, displaysPerDevice: 200)
        #expect(few.devices.unit == .device)
        #expect(few.devices.smallSample, "1,600 notifications a side from 8 devices")
        #expect(!few.naive.smallSample, "as independent notifications they are plenty")
        let many = try expansion(devicesPerSide: 40, displaysPerDevice: 200)
        #expect(many.devices.unit == .device)
        #expect(!many.devices.smallSample)
    }

    /// A report built with device moments takes the device as the unit for a category's rows and
    /// the adjusted answer, with the design effect; with a day filter it falls back to notifications.
    @Test func theCategoryRowsAndTheHeadlineUseTheDevicesWhenTheMomentsMatchTheCounts() throws {
        let study = ReportCoverageStudy(devices: 120, notificationsPerDevice: 30)
        let (rows, moments, _) = study.simulate(seed: 5, dataset: 0)
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
        // The design effect beside the ratio's interval is the ratio's (its square root widens that interval).
        let ratioEffect = try #require(headline.designEffect).riskRatio
        #expect(headline.headline.contains("devices as the unit, design effect " + ReportFormat.fixed(ratioEffect, 2) + ")"),
                "\(headline.headline)")
        #expect(ReportFormat.fixed(ratioEffect, 2) != ReportFormat.fixed(try #require(headline.designEffect).riskDifference, 2))
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
    /// large). The adjusted figures with the device as the unit, a device counted once across
    /// categories (the categories' pair moments), cover the truth by the same bound; without the
    /// pair moments they cover less often (docs/report.md, "The device as the unit").
    /// `engage bench report-coverage` runs the same study at 1,000 datasets (BENCHMARKS.md).
    @Test func deviceIntervalsCoverTheTruthAndNaiveOnesDoNot() {
        let results = ReportCoverageStudy(devices: 200, notificationsPerDevice: 40).run(datasets: 60, seed: 16)
        for result in results {
            for (name, coverage) in [("difference", result.deviceDifference), ("ratio", result.deviceRatio),
                                     ("adjusted difference", result.deviceAdjustedDifference),
                                     ("adjusted ratio", result.deviceAdjustedRatio)] {
                #expect(coverage.intervals >= 60)
                #expect(coverage.proportion.clopperPearsonUpperBound(confidence: 0.99) >= 0.93,
                        "\(result.metric) \(name): \(coverage.covered) of \(coverage.intervals)")
            }
            #expect(result.deviceAdjustedDifference.covered >= result.separateAdjustedDifference.covered)
            #expect(result.deviceAdjustedRatio.covered >= result.separateAdjustedRatio.covered)
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
