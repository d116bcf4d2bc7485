import Testing
@testable import EngageCore

/// Counts read from the read model may hold anything an older version or a hand edit left there:
/// sums of them past the largest integer are held at it, or refused, and never crash the report,
/// the console or a look (each trapped before).
@Suite struct StoredCountOverflowTests {
    @Test func storedHistogramCountsAddingUpPastTheLargestAreRefused() {
        var counts = [Int64](repeating: 0, count: LatencyHistogram.Layout.standard.countsLength)
        counts[3] = .max
        counts[7] = 1
        #expect(throws: StatisticsError.self) { try LatencyHistogram(counts: counts) }
    }

    @Test func histogramsMergedPastTheLargestCountStillAnswerQuantiles() throws {
        var counts = [Int64](repeating: 0, count: LatencyHistogram.Layout.standard.countsLength)
        counts[3] = .max - 1
        var merged = try LatencyHistogram(counts: counts)
        merged.merge(try LatencyHistogram(counts: counts))
        merged.record(250, count: 5)
        #expect(merged.totalCount == .max)
        #expect(merged.counts[3] == .max)
        #expect(merged.quantile(0.5) != nil && merged.quantile(1) != nil)
    }

    @Test func telemetrySumsPastTheLargestCountAreHeldThere() {
        let day = UTCDay(daysSinceEpoch: 20_000)
        let rows = [Int.max, 1].map { count in
            TelemetryRow(appID: "app", category: "news", attachmentKind: "image", day: day, delivered: count,
                         outcomes: [.attached: count], timeWillExpire: count, cacheHits: count, networkFetches: count,
                         bytesReported: count)
        }
        let summary = TelemetrySummary(category: "news", attachmentKind: "image", rows: rows)
        #expect(summary.delivered == .max && summary.outcomes[.attached] == .max && summary.timeWillExpire == .max)
        #expect(summary.bytesReported == .max)
        #expect(summary.cacheHitRate.map { (0...1).contains($0) } == true)
    }

    @Test func actionCountsPastTheLargestAreHeldThere() {
        let day = UTCDay(daysSinceEpoch: 20_000)
        let rows = [Int.max, 1].map { count in
            ActionCountRow(appID: "app", category: "news", presentation: .rich, attachmentKind: "image", day: day,
                           actionID: "save", count: count)
        }
        let report = EngagementReport.build(
            engagement: [EngagementRow(appID: "app", category: "news", presentation: .rich, attachmentKind: "image", day: day,
                                       counts: FunnelCounts([.notifications: 2, .delivered: 2, .displayed: 2, .actioned: 2]))],
            actions: rows, grouping: .action, generatedAt: Timestamp(rfc3339: "2026-11-29T20:00:00Z")!)
        #expect(!report.groups.isEmpty)
    }

    /// Two stored rows of one group whose displayed counts add up past the largest integer: the
    /// group's count is held there (it wrapped to a negative count, and no rate), and the forest
    /// plot's weights (rich plus plain displayed) no longer trap.
    @Test func funnelCountsPastTheLargestAreHeldThereAndRender() throws {
        let rows = [
            ReportFixture.engagement("news", .rich, "image", notifications: .max, delivered: .max, displayed: .max,
                                     expanded: .max / 2, opened: 5),
            ReportFixture.engagement("news", .rich, "image", notifications: 10, delivered: 10, displayed: 10, expanded: 3, opened: 2),
            ReportFixture.engagement("news", .plain, "none", notifications: 10, delivered: 10, displayed: 10, expanded: 3, opened: 2),
        ]
        let report = EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
        let news = try #require(report.groups.first)
        #expect(news.rich[.displayed] == .max && report.total.rich[.displayed] == .max)
        #expect(news.metrics.allSatisfy { $0.rich.rate != nil })
        #expect(report.renderHTML().contains("news"))
        #expect(!report.renderTable().isEmpty)
    }

    /// Two categories whose rich displayed counts add up past the largest integer: the pooled
    /// counts of the small-sample rule are held there (the sum across categories trapped).
    @Test func funnelCountsOfTwoCategoriesPastTheLargestAreHeldThereAndRender() throws {
        let rows = [
            ReportFixture.engagement("news", .rich, "image", notifications: .max, delivered: .max, displayed: .max, opened: 5),
            ReportFixture.engagement("news", .plain, "none", notifications: 10, delivered: 10, displayed: 10, opened: 2),
            ReportFixture.engagement("sports", .rich, "image", notifications: 10, delivered: 10, displayed: 10, opened: 2),
            ReportFixture.engagement("sports", .plain, "none", notifications: 10, delivered: 10, displayed: 10, opened: 2),
        ]
        let report = EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
        #expect(report.groups.map(\.key.category) == ["news", "sports"])
        #expect(report.total.rich[.displayed] == .max)
        #expect(report.renderHTML().contains("sports"))
        #expect(!report.renderTable().isEmpty)
    }

    /// One category's stored device moments in two apps, merged for a report over both: sums past
    /// the largest integer are held there (they trapped), and the merged moments stay valid.
    @Test func deviceMomentsOfACategoryInTwoAppsPastTheLargestAreHeldThere() throws {
        let moments = try DeviceMoments(devices: 1, successes: 1, trials: 2_000_000_000, successesSquared: 1,
                                        trialsSquared: 5_000_000_000_000_000_000, successesTimesTrials: 2_000_000_000)
        let cross = try DeviceCrossMoments(successesProduct: 1, firstSuccessesSecondTrials: 1, firstTrialsSecondSuccesses: 1,
                                           trialsProduct: 5_000_000_000_000_000_000)
        let parts = ["app-1", "app-2"].map { app in
            CategoryDeviceMoments(appID: app, category: "news", rich: [.open: moments], plain: [.open: moments], shared: [.open: cross])
        }

        let merged = CategoryDeviceMoments.merged(parts, category: "news")

        let rich = try #require(merged.rich[.open])
        #expect(rich.trialsSquared == .max && rich.trials == 4_000_000_000 && rich.devices == 2)
        #expect(merged.shared[.open]?.trialsProduct == .max)
        #expect(throws: Never.self) {
            try DeviceMoments(devices: rich.devices, successes: rich.successes, trials: rich.trials,
                              successesSquared: rich.successesSquared, trialsSquared: rich.trialsSquared,
                              successesTimesTrials: rich.successesTimesTrials)
        }
    }

    /// A stored lift of ±8e307 would make the scale's span infinite (a trap turning it into tick
    /// counts), and ±1e308 would never end the search for its step: such values are left out.
    @Test(arguments: [[8e307, -8e307], [1e308], [-1e308, 0.1], [1e300, -1e300]])
    func aScaleOverValuesNearTheLargestDoubleIsFinite(values: [Double]) {
        let scale = ChartScale(covering: values, including: [0])
        #expect(scale.lower.isFinite && scale.upper.isFinite && scale.step > 0)
        #expect((2...20).contains(scale.ticks.count), "\(scale.ticks)")
    }
}

@Suite struct StoredTallyOverflowTests {
    /// A stored processing-time bucket at the largest count (valid alone) and a new event in it:
    /// the incremental look holds the bucket there instead of crashing the scheduler.
    @Test func aStoredBucketAtTheLargestCountTakesOneMore() throws {
        let definition = ExperimentDefinition(
            id: "thumbs-v1", appID: "app-1", categories: ["news"],
            arms: [ExperimentArmDefinition(name: "full", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "poster", strategy: .poster, weight: 0.5)],
            primaryMetric: .open)
        let layout = LatencyHistogram.Layout.standard
        var counts = [Int64](repeating: 0, count: layout.countsLength)
        counts[layout.index(of: 900)] = .max
        var state = ExperimentTallyState(definition: definition)
        try state.load(.arm(0), processingCounts: counts)

        state.replace(nil, with: ExperimentObservation(arm: .arm(0), category: "news", deviceID: "d1",
                                                       stages: [.notifications, .delivered], presentation: .unknown,
                                                       processingMS: 900))

        #expect(state.processing[.arm(0)]?[layout.index(of: 900)] == .max)
        #expect(state.notifications == 1)
    }
}
