import Testing
@testable import EngageCore

@Suite struct EngagementReportTests {
    static func report(_ grouping: ReportGrouping = .category, filters: ReportFilters = ReportFilters()) -> EngagementReport {
        EngagementReport.build(engagement: ReportFixture.engagementRows, actions: ReportFixture.actionRows,
                               telemetry: ReportFixture.telemetryRows, grouping: grouping, filters: filters,
                               generatedAt: ReportFixture.generatedAt)
    }

    static func metric(_ group: ReportGroup, _ metric: ReportMetric) throws -> MetricComparison {
        try #require(group.metrics.first { $0.metric == metric })
    }

    static func metric(_ group: ReportGroup, _ metric: EngagementMetric) throws -> MetricComparison {
        try self.metric(group, .engagement(metric))
    }

    // MARK: Rates and intervals

    @Test func ratesAreOverDisplayedNotificationsWithWilsonIntervals() throws {
        let report = Self.report()
        #expect(report.groups.map(\.key.label) == ["news", "promo"])
        let news = report.groups[0]
        #expect(news.rich.funnel == FunnelCounts([.notifications: 280, .delivered: 270, .displayed: 263, .expanded: 81,
                                                  .actioned: 40, .opened: 60, .dismissed: 100, .replied: 5]))
        #expect(news.plain.funnel == FunnelCounts([.notifications: 320, .delivered: 310, .displayed: 300, .expanded: 48,
                                                   .actioned: 30, .opened: 45, .dismissed: 150, .replied: 0]))
        #expect(news.notDisplayed == PresentationCounts(funnel: FunnelCounts([.notifications: 20, .delivered: 12])))
        #expect(news.rich.actions.isEmpty && news.plain.actions.isEmpty)
        let order: [EngagementMetric] = [.expansion, .action, .open, .dismiss, .reply]
        #expect(news.metrics.map(\.metric) == order.map(ReportMetric.engagement))

        let expansion = try Self.metric(news, .expansion)
        #expect(expansion.rich.successes == 81 && expansion.rich.trials == 263)
        #expect(expansion.rich.rate == 81.0 / 263.0)
        #expect(expansion.plain.rate == 0.16)
        // statsmodels proportion_confint(81, 263, method="wilson"), from the statistics fixtures.
        let reference = Independent.wilson95[0]
        #expect(reference.successes == 81 && reference.trials == 263)
        let rich = try #require(expansion.rich.interval)
        #expect(matches(rich.lower, reference.lower, decimals: 14))
        #expect(matches(rich.upper, reference.upper, decimals: 14))
        // 48/300 by the Wilson formula in mpmath at 40 digits.
        let plain = try #require(expansion.plain.interval)
        #expect(matches(plain.lower, 0.12285354558409953, decimals: 14))
        #expect(matches(plain.upper, 0.20574367484859178, decimals: 14))

        let open = try Self.metric(news, .open)
        #expect(open.rich.rate == 60.0 / 263.0)
        #expect(open.rich.interval == (try Proportion(successes: 60, trials: 263)).wilsonInterval())
    }

    @Test func newcombeIntervalMatchesTheReferenceValue() throws {
        // Newcombe (1998) Table II, 56/70 against 48/80, as statsmodels computes it.
        let vector = Independent.newcombe95[0]
        let report = EngagementReport.build(engagement: [
            ReportFixture.engagement("c", .rich, "image", notifications: 70, delivered: 70, displayed: vector.n1,
                                     opened: vector.x1),
            ReportFixture.engagement("c", .plain, "none", notifications: 80, delivered: 80, displayed: vector.n2,
                                     opened: vector.x2),
        ], generatedAt: ReportFixture.generatedAt)
        let open = try Self.metric(report.groups[0], .open)
        let interval = try #require(open.absoluteInterval)
        #expect(matches(interval.lower, vector.lower, decimals: 12))
        #expect(matches(interval.upper, vector.upper, decimals: 12))
    }

    @Test func liftAndPValueAreWiredToTheStatisticsModule() throws {
        let expansion = try Self.metric(Self.report().groups[0], .expansion)
        let comparison = ProportionComparison(variant: try Proportion(successes: 81, trials: 263),
                                              control: try Proportion(successes: 48, trials: 300))
        #expect(expansion.absoluteLift == 81.0 / 263.0 - 0.16)
        #expect(expansion.absoluteInterval == comparison.newcombeInterval())
        #expect(expansion.relativeLift == (81.0 / 263.0) / 0.16 - 1)
        let ratio = try comparison.ratioEstimate(.miettinenNurminenScore)
        #expect(expansion.ratio == ratio)
        #expect(expansion.relativeInterval == ratio.relativeInterval)
        #expect(expansion.pValue == ratio.pValue)
        #expect(expansion.significant == true)
        #expect(expansion.smallSample == false)

        // Independent values: Newcombe's method 10 (mpmath at 40 digits); the relative interval and
        // p from statsmodels 0.15 `confint_proportions_2indep` / `test_proportions_2indep` with
        // `compare="ratio", method="score"` (Miettinen-Nurminen), the row's one method.
        let absolute = try #require(expansion.absoluteInterval)
        #expect(matches(absolute.lower, 0.07820384243181609, decimals: 12))
        #expect(matches(absolute.upper, 0.21704986738231544, decimals: 12))
        #expect(matches(try #require(expansion.relativeLift), 0.92490494296577947, decimals: 12))
        let relative = try #require(expansion.relativeInterval)
        #expect(matches(relative.lower, 1.4067331036196227 - 1, decimals: 9))
        #expect(matches(relative.upper, 2.6435778011567064 - 1, decimals: 9))
        #expect(matches(try #require(expansion.pValue), 3.1175830448526256e-05, relative: 1e-9))

        // action: 40/263 against 30/300 is not significant.
        let action = try Self.metric(Self.report().groups[0], .action)
        let actionP = try #require(action.pValue)
        #expect(matches(actionP, 0.06186876649545589, relative: 1e-9))
        #expect(action.significant == false)
        #expect(try #require(action.relativeInterval).contains(0))
        #expect(action.significant == false)
    }

    // MARK: Grouping and filtering

    @Test func attachmentGroupingSplitsByKindInDisplayOrder() {
        let report = Self.report(.attachment)
        #expect(report.groups.map(\.key.label) == ["news · image", "news · gif", "news · none", "promo · video",
                                                   "promo · unknown"])
        let image = report.groups[0]
        #expect(image.rich[.displayed] == 140 && image.plain[.displayed] == 160 && image.notDisplayed[.notifications] == 20)
        #expect(report.groups[1].plain == PresentationCounts())
        #expect(report.total.rich[.displayed] == 283 && report.total.plain[.displayed] == 300)
        #expect(report.total.key == ReportGroupKey(category: nil))
    }

    @Test func dayGroupingSplitsByUTCDay() {
        let report = Self.report(.day)
        #expect(report.groups.map(\.key) == [
            ReportGroupKey(category: "news", day: ReportFixture.day1),
            ReportGroupKey(category: "news", day: ReportFixture.day2),
            ReportGroupKey(category: "promo", day: ReportFixture.day1),
        ])
        #expect(report.groups[1].rich[.displayed] == 123 && report.groups[1].plain[.displayed] == 140)
        #expect(report.groups[1].key.label == "news · 2026-11-28")
    }

    @Test func actionGroupingHasARatePerActionID() throws {
        let report = Self.report(.action)
        #expect(report.groups.map(\.key.label) == ["news", "promo"])
        let news = report.groups[0]
        #expect(news.metrics.map(\.metric.key) == ["action:save", "action:share"])
        let save = try Self.metric(news, .customAction("save"))
        #expect(save.rich.successes == 21 && save.rich.trials == 263)
        #expect(save.plain.successes == 10 && save.plain.trials == 300)
        #expect(save.absoluteLift == 21.0 / 263.0 - 10.0 / 300.0)
        let share = try Self.metric(news, .customAction("share"))
        #expect(share.notDisplayedCount == 1)
        #expect(share.rich.successes == 19 && share.plain.successes == 20)
        #expect(report.groups[1].metrics.isEmpty)
        #expect(report.total.metrics.map(\.metric.key) == ["action:save", "action:share"])
        // Other groupings leave the action rows out.
        #expect(Self.report().groups[0].rich.actions.isEmpty)
    }

    @Test func filtersApplyToEngagementActionsAndTelemetry() throws {
        let filters = ReportFilters(categories: ["news"], from: ReportFixture.day2)
        let report = Self.report(.action, filters: filters)
        #expect(report.groups.map(\.key.label) == ["news"])
        #expect(report.total.rich[.displayed] == 123 && report.total.plain[.displayed] == 140)
        let save = try Self.metric(report.groups[0], .customAction("save"))
        #expect(save.rich.successes == 9 && save.plain.successes == 0)
        #expect(report.telemetry.map { $0.attachmentKind } == ["image", "none"])
        #expect(report.telemetryTotal.delivered == 250)
        #expect(filters.summary.map { "\($0.name)=\($0.value)" } == ["categories=news", "days=2026-11-28 to …"])

        let kinds = Self.report(filters: ReportFilters(attachmentKinds: ["video", "gif"], through: ReportFixture.day1))
        #expect(kinds.groups.map(\.key.label) == ["promo"])
        #expect(kinds.telemetryTotal.delivered == 21)

        let nobody = Self.report(filters: ReportFilters(appIDs: ["other"]))
        #expect(nobody.groups.isEmpty && nobody.telemetry.isEmpty)
        #expect(nobody.total.rich == PresentationCounts())
        #expect(nobody.total.metrics.allSatisfy { $0.rich.rate == nil && $0.absoluteLift == nil && $0.pValue == nil })
    }

    // MARK: Undefined values

    @Test func zeroDenominatorsGiveNilFields() throws {
        let promo = Self.report().groups[1]
        for metric in promo.metrics {
            #expect(metric.plain.trials == 0 && metric.plain.rate == nil && metric.plain.interval == nil)
            #expect(metric.absoluteLift == nil && metric.absoluteInterval == nil)
            #expect(metric.relativeLift == nil && metric.relativeInterval == nil)
            #expect(metric.pValue == nil && metric.significant == nil)
            #expect(metric.smallSample)
        }
        #expect(try Self.metric(promo, .expansion).rich.rate == 0.15)
    }

    @Test func zeroPlainRateLeavesTheRatioAndItsTestUndefined() throws {
        let reply = try Self.metric(Self.report().groups[0], .reply)
        #expect(reply.plain.rate == 0)
        #expect(reply.absoluteLift == 5.0 / 263.0)
        #expect(reply.absoluteInterval != nil)
        // One method per row: without a ratio there is no interval, so no p and no flag either.
        #expect(reply.ratio == nil && reply.relativeLift == nil && reply.relativeInterval == nil)
        #expect(reply.pValue == nil && reply.significant == nil)
        #expect(reply.smallSample)
    }

    @Test func rateOfOneHasAScoreInterval() throws {
        let report = EngagementReport.build(engagement: [
            ReportFixture.engagement("c", .rich, "image", notifications: 40, delivered: 40, displayed: 40, opened: 40),
            ReportFixture.engagement("c", .plain, "none", notifications: 40, delivered: 40, displayed: 40, opened: 20),
        ], generatedAt: ReportFixture.generatedAt)
        let open = try Self.metric(report.groups[0], .open)
        #expect(open.relativeLift == 1)
        // statsmodels 0.15, compare="ratio", method="score"; the log interval would be undefined.
        let relative = try #require(open.relativeInterval)
        #expect(matches(relative.lower, 1.541174014309935 - 1, decimals: 9))
        #expect(matches(relative.upper, 2.8478344738616106 - 1, decimals: 9))
        #expect(matches(try #require(open.pValue), 2.872873258597871e-07, relative: 1e-9))
        #expect(open.absoluteInterval != nil)
    }

    @Test func inconsistentCountsGiveNoRate() throws {
        let report = EngagementReport.build(engagement: [
            ReportFixture.engagement("c", .rich, "image", notifications: 5, delivered: 5, displayed: 5, expanded: 7),
        ], generatedAt: ReportFixture.generatedAt)
        let expansion = try Self.metric(report.groups[0], .expansion)
        #expect(expansion.rich.successes == 7 && expansion.rich.rate == nil && expansion.rich.interval == nil)
    }

    @Test func anEmptyReportRendersInEveryFormat() throws {
        let report = EngagementReport.build(engagement: [], generatedAt: ReportFixture.generatedAt)
        #expect(report.groups.isEmpty && report.telemetryTotal.delivered == 0)
        #expect(report.telemetryTotal.cacheHitRate == nil && report.telemetryTotal.meanBytes == nil)
        #expect(report.telemetryTotal.download.p50 == nil && report.telemetryTotal.timeoutShare == nil)
        let json = try JSON.parse(report.renderJSON())
        #expect(json.count(try #require(json.member(json.root, "groups"))) == 0)
        #expect(report.renderTable().contains("== all categories (crude) =="))
        #expect(report.stratified.allSatisfy { $0.riskRatio == nil && $0.unavailable?.hasPrefix("not enough data") == true })
        #expect(report.renderTable().contains("not enough data"))
        #expect(!report.renderJSON().contains(Array("NaN".utf8)) && !report.renderTable().contains("nan"))
        #expect(report.renderHTML().contains("No extension telemetry"))
        #expect(report.renderCSV().hasPrefix("section,category,"))
    }

    // MARK: Telemetry

    @Test func telemetryIsSummedPerCategoryAndKindWithTotals() throws {
        let report = Self.report()
        #expect(report.telemetry.map { "\($0.category ?? "*")/\($0.attachmentKind ?? "*")" }
                == ["news/image", "news/none", "promo/video"])
        #expect(report.telemetryByAttachment.map { $0.attachmentKind ?? "*" } == ["image", "video", "none"])
        let image = report.telemetry[0]
        #expect(image.delivered == 300)
        #expect(image.outcomes == [.attached: 280, .timeout: 12, .tooLarge: 8, .unsupportedFormat: 0,
                                   .downloadFailed: 0, .notRequested: 0])
        #expect(image.timeoutShare == 0.04)
        #expect(image.tooLargeShare == 8.0 / 300.0)
        #expect(image.timeWillExpire == 12)
        #expect(image.cacheHitRate == 100.0 / 300.0)
        #expect(image.totalBytes == 56_000_000 && image.bytesReported == 280)
        #expect(image.meanBytes == 200_000)

        var download = ReportFixture.histogram([(120, 100), (400, 70), (2000, 10)])
        download.merge(ReportFixture.histogram([(100, 100)]))
        #expect(image.download == LatencyPercentiles(download))
        #expect(image.download.count == 280)
        #expect(image.download.p50 == download.quantile(0.5))
        #expect(image.download.p99 == LatencyHistogram.Layout.standard.representative(
            ofIndex: LatencyHistogram.Layout.standard.index(of: 2000)))

        let none = report.telemetry[1]
        #expect(none.download.p50 == nil && none.cacheHitRate == nil && none.meanBytes == nil)
        #expect(none.share(of: .notRequested) == 1)

        let total = report.telemetryTotal
        #expect(total.delivered == 471 && total.outcomes[.downloadFailed] == 6)
        #expect(total.cacheHitRate == 100.0 / 321.0)
        #expect(total.processing.count == 471)
    }

    @Test func histogramsOfAnotherLayoutAreMergedWithoutStopping() {
        let coarse = LatencyHistogram.Layout(minimum: 1, maximum: 10_000, relativeError: 0.05)
        var other = LatencyHistogram(layout: coarse)
        other.record(500, count: 3)
        let rows = [
            TelemetryRow(appID: "a", category: "c", attachmentKind: "image", day: ReportFixture.day1, delivered: 1,
                         downloadHistogram: ReportFixture.histogram([(100, 1)])),
            TelemetryRow(appID: "a", category: "c", attachmentKind: "image", day: ReportFixture.day1, delivered: 3,
                         downloadHistogram: other),
        ]
        let report = EngagementReport.build(engagement: [], telemetry: rows, generatedAt: ReportFixture.generatedAt)
        #expect(report.telemetryTotal.download.count == 4)
        let p99 = report.telemetryTotal.download.p99 ?? 0
        #expect(abs(p99 - 500) < 0.07 * 500)
    }
}
