import Testing
@testable import EngageCore

/// The adjusted answer in the report (issue 16 points 1-3): the reference vector's three
/// categories fed through the read-model rows, and the bad-input cases.
@Suite struct StratifiedReportTests {
    static func vector() throws -> SharedStratifiedFile.Stratified {
        try decodeFixture(SharedStratifiedFile.self, from: StratifiedSharedVectors.json, snakeCase: false).stratified
    }

    /// The vector's expansion counts as read-model rows, each category split over two attachment
    /// kinds and two days (so that every grouping has to put them back together).
    static func rows(_ vector: SharedStratifiedFile.Stratified) -> [EngagementRow] {
        vector.strata.flatMap { stratum -> [EngagementRow] in
            func split(_ counts: SharedStratifiedFile.Counts, _ presentation: ObservedPresentation) -> [EngagementRow] {
                let firstDisplayed = counts.displayed / 3, firstSuccesses = counts.successes / 3
                return [
                    ReportFixture.engagement(stratum.category, presentation, presentation == .rich ? "image" : "none",
                                             day: ReportFixture.day1, notifications: firstDisplayed,
                                             delivered: firstDisplayed, displayed: firstDisplayed, expanded: firstSuccesses),
                    ReportFixture.engagement(stratum.category, presentation, presentation == .rich ? "gif" : "none",
                                             day: ReportFixture.day2, notifications: counts.displayed - firstDisplayed,
                                             delivered: counts.displayed - firstDisplayed,
                                             displayed: counts.displayed - firstDisplayed,
                                             expanded: counts.successes - firstSuccesses),
                ]
            }
            return split(stratum.rich, .rich) + split(stratum.plain, .plain)
        }
    }

    static func expansion(_ report: EngagementReport) throws -> StratifiedMetricSummary {
        try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
    }

    @Test(arguments: [ReportGrouping.category, .attachment, .day])
    func everyGroupingStratifiesTheTotalByCategory(_ grouping: ReportGrouping) throws {
        let vector = try Self.vector()
        let report = EngagementReport.build(engagement: Self.rows(vector), grouping: grouping,
                                            generatedAt: ReportFixture.generatedAt)
        #expect(report.stratified.map(\.metric) == report.total.metrics.map(\.metric))
        let summary = try Self.expansion(report)
        #expect(summary.categories.map(\.name) == ["chat_message", "new_photo", "promo_sale"])
        #expect(summary.excluded.isEmpty && summary.unavailable == nil)

        // The published figures (reference/stratified-vectors.json: statsmodels and the formulas).
        let riskRatio = try #require(summary.riskRatio)
        #expect(riskRatio.method == .mantelHaenszelGreenlandRobins)
        #expect(matches(riskRatio.estimate, vector.mantelHaenszelRiskRatio.estimate, relative: 1e-12))
        #expect(matches(riskRatio.interval.lower, vector.mantelHaenszelRiskRatio.ci95[0], relative: 1e-9))
        #expect(matches(riskRatio.interval.upper, vector.mantelHaenszelRiskRatio.ci95[1], relative: 1e-9))
        let riskDifference = try #require(summary.riskDifference)
        #expect(riskDifference.method == .mantelHaenszelSato)
        #expect(matches(riskDifference.estimate, vector.mantelHaenszelRiskDifference.estimate, relative: 1e-12))
        #expect(matches(riskDifference.interval.lower, vector.mantelHaenszelRiskDifference.ci95[0], relative: 1e-9))
        #expect(matches(riskDifference.interval.upper, vector.mantelHaenszelRiskDifference.ci95[1], relative: 1e-9))
        let cmh = try #require(summary.cochranMantelHaenszel)
        #expect(matches(cmh.statistic, vector.cmh.statistic, relative: 1e-9))
        #expect(matches(cmh.pValue, vector.cmh.pValue, relative: 1e-9))
        // Cochran's Q on log ratios, p = 0.174 in docs/report-statistics.md; the engine is
        // checked against statsmodels in StratifiedComparisonTests.
        let homogeneity = try #require(summary.homogeneity)
        #expect(homogeneity.test.degreesOfFreedom == 2)
        #expect(homogeneity.test.pValue > 0.05 && !summary.categoriesDisagree)
        #expect(summary.pointingTheOtherWay == ["promo_sale"])

        // One method per row: p and the flag follow the interval shown.
        #expect(riskRatio.isSignificant == !riskRatio.interval.contains(1))
        #expect((riskRatio.pValue < 0.05) == riskRatio.isSignificant)
        #expect((riskDifference.pValue < 0.05) == riskDifference.isSignificant)
    }

    @Test func crudeAndAdjustedDisagreeingIsSaidInWords() throws {
        let report = EngagementReport.build(engagement: Self.rows(try Self.vector()),
                                            generatedAt: ReportFixture.generatedAt)
        let summary = try Self.expansion(report)
        let crude = try #require(summary.crude)
        #expect(crude == report.total.metrics.first { $0.metric == .engagement(.expansion) }?.ratio)
        #expect(crude.estimate < 1 && crude.isSignificant)
        let disagreement = try #require(summary.crudeDisagreement)
        #expect(disagreement.direction && disagreement.significance)
        let headline = summary.headline
        #expect(headline.hasPrefix("Adjusted for category, rich notifications are expanded 1.06x as often as plain "
            + "ones [0.96, 1.17], not significant (p = 0.276; 3 categories; notifications as the unit); no clear disagreement between "
            + "categories (Cochran's Q p = 0.174), though promo_sale 0.89x [0.71, 1.11] points the other way."))
        #expect(headline.contains("The crude total, which pools categories, says 0.57x [0.53, 0.61]: it points the "
            + "other way and is significant where the adjusted figure is not (Simpson's paradox"))

        // Every rendering carries the sentence and the warning.
        let warning = try #require(summary.crudeWarning)
        #expect(ReportRenderingTests.collapsed(report.renderTable()).contains(headline))
        let html = report.renderHTML()
        #expect(html.contains("<span class=\"paradox\">" + HTMLText.escape(warning) + "</span>"))
        #expect(html.range(of: "The answer, adjusted for category")!.lowerBound < html.range(of: "Read this first")!.lowerBound)
        let json = try JSON.parse(report.renderJSON())
        let stratified = json.elements(try #require(json.member(json.root, "stratified")))
        let first = try #require(Array(stratified).first)
        #expect(json.string(try #require(json.member(first, "headline"))) == headline)
        let words = try #require(json.member(first, "crude_disagreement"))
        #expect(json.string(try #require(json.member(words, "text"))) == warning)
        let total = try #require(json.member(json.root, "total"))
        #expect(json.bool(try #require(json.member(total, "crude"))) == true)
        let csv = ReportRenderingTests.parseCSV(report.renderCSV())
        let figure = EngagementReport.csvHeader.firstIndex(of: "figure")!
        let value = EngagementReport.csvHeader.firstIndex(of: "value")!
        #expect(csv.contains { $0[0] == "stratified" && $0[4] == "expansion" && $0[figure] == "headline" && $0[value] == headline })
        #expect(csv.contains { $0[0] == "stratified" && $0[figure] == "crude_disagreement" && $0[value] == warning })
        #expect(csv.allSatisfy { $0.count == EngagementReport.csvHeader.count })
    }

    @Test func categoriesThatDisagreeAreNamed() throws {
        // a and b: rich doubles the rate; c: rich halves it, with enough data to be sure.
        let rows = [("a", 200, 1000, 100, 1000), ("b", 300, 1000, 150, 1000), ("c", 50, 1000, 100, 1000)]
            .flatMap { category, richX, richN, plainX, plainN in
                [ReportFixture.engagement(category, .rich, "image", notifications: richN, delivered: richN,
                                          displayed: richN, expanded: richX),
                 ReportFixture.engagement(category, .plain, "none", notifications: plainN, delivered: plainN,
                                          displayed: plainN, expanded: plainX)]
            }
        let summary = try Self.expansion(EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt))
        #expect(summary.categoriesDisagree)
        #expect(summary.disagreeing.contains("c"))
        #expect(summary.categoryWords?.hasPrefix("categories disagree (Cochran's Q p < 0.001): ") == true)
        #expect(summary.categoryWords?.contains("c 0.50x [") == true)
        let plot = ForestPlot(summary: summary).svg
        #expect(plot.contains("<polygon points=") && plot.contains("stroke-dasharray"))
        #expect(plot.contains(">c ≠</text>"))
    }

    @Test func aCategoryWithoutRichOrPlainIsExcludedAndListed() throws {
        var rows = Self.rows(try Self.vector())
        rows.append(ReportFixture.engagement("only_plain", .plain, "none", notifications: 50, delivered: 50,
                                             displayed: 50, expanded: 40))
        rows.append(ReportFixture.engagement("only_rich", .rich, "image", notifications: 50, delivered: 50,
                                             displayed: 50, expanded: 1))
        let report = EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
        let summary = try Self.expansion(report)
        #expect(summary.excluded == [ExcludedStratum(name: "only_plain", reason: .noVariantTrials),
                                     ExcludedStratum(name: "only_rich", reason: .noControlTrials)])
        // Nothing of them enters the summary: the figures are the vector's.
        #expect(matches(try #require(summary.riskRatio).estimate, try Self.vector().mantelHaenszelRiskRatio.estimate,
                        relative: 1e-12))
        #expect(summary.headline.hasSuffix("Excluded: only_plain (no rich displays), only_rich (no plain displays)."))
        let text = String(decoding: report.renderJSON(), as: UTF8.self)
        #expect(text.contains(#"{"category":"only_plain","reason":"no_variant_trials"}"#))
    }

    @Test func noComparableCategoryIsNotEnoughDataNeverNaN() throws {
        let rows = [
            ReportFixture.engagement("a", .rich, "image", notifications: 10, delivered: 10, displayed: 10, expanded: 3),
            ReportFixture.engagement("b", .plain, "none", notifications: 10, delivered: 10, displayed: 10, expanded: 3),
        ]
        let report = EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
        for summary in report.stratified {
            #expect(summary.riskRatio == nil && summary.riskDifference == nil && summary.cochranMantelHaenszel == nil)
            #expect(summary.homogeneity == nil && summary.crudeDisagreement == nil)
            #expect(summary.unavailable == "not enough data: no category has both rich and plain displayed notifications")
            #expect(summary.headline.contains("not enough data"))
        }
        for text in [report.renderTable(), report.renderHTML(), report.renderCSV(),
                     String(decoding: report.renderJSON(), as: UTF8.self)] {
            #expect(!text.contains("nan") && !text.contains("NaN") && !text.contains("inf"))
        }
    }

    @Test func aFigureThatCannotBeComputedSaysWhy() throws {
        // No plain notification was replied to anywhere: no ratio, but the difference stands.
        let rows = [
            ReportFixture.engagement("a", .rich, "image", notifications: 100, delivered: 100, displayed: 100, replied: 5),
            ReportFixture.engagement("a", .plain, "none", notifications: 100, delivered: 100, displayed: 100, replied: 0),
        ]
        let report = EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
        let reply = try #require(report.stratified.first { $0.metric == .engagement(.reply) })
        #expect(reply.riskRatio == nil && reply.riskDifference != nil)
        #expect(reply.unavailable == "not enough data for risk ratio: no plain successes in any category")
        #expect(reply.homogeneity == nil)
    }

    @Test func relativeIntervalsNeverGoBelowMinusOneHundredPercent() throws {
        // The issue's case: new_photo reply 11/62 against 1/10 showed [-131.7%, +286.4%].
        let file = try decodeFixture(SharedStratifiedFile.self, from: StratifiedSharedVectors.json, snakeCase: false)
        for vector in file.relativeIntervals {
            let report = EngagementReport.build(engagement: [
                ReportFixture.engagement("c", .rich, "image", notifications: vector.rich[1], delivered: vector.rich[1],
                                         displayed: vector.rich[1], replied: vector.rich[0]),
                ReportFixture.engagement("c", .plain, "none", notifications: vector.plain[1], delivered: vector.plain[1],
                                         displayed: vector.plain[1], replied: vector.plain[0]),
            ], generatedAt: ReportFixture.generatedAt)
            let reply = try #require(report.groups[0].metrics.first { $0.metric == .engagement(.reply) })
            let interval = try #require(reply.relativeInterval)
            #expect(interval.lower > -1)
            #expect(matches(interval.lower, vector.score[0], relative: 1e-9))
            #expect(matches(interval.upper, vector.score[1], relative: 1e-9))
            #expect(reply.significant == !interval.contains(0))
        }
    }
}
