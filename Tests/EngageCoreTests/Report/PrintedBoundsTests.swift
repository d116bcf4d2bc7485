import Foundation
import Testing
@testable import EngageCore

/// What a reader sees must agree with the word beside it: a "significant" interval must not be
/// printed reaching "no effect" (1.00x, 0.0%, 0.0 pp), and an interval printed clear of it must
/// be significant. Rounding a bound of 1.004 to "1.00" printed "[1.00, 1.17], significant".
@Suite struct PrintedBoundsTests {
    /// The bounds of the first `[lower, upper]` after `marker` in `text`.
    static func bounds(in text: String, after marker: String) -> (String, String)? {
        guard let start = text.range(of: marker)?.upperBound,
              let open = text[start...].firstIndex(of: "["),
              let close = text[open...].firstIndex(of: "]") else { return nil }
        let parts = text[text.index(after: open)..<close].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }

    /// True when the printed interval, read as numbers, keeps `null` strictly outside.
    static func printedClear(_ bounds: (String, String), null: Double) -> Bool {
        let lower = Double(bounds.0.replacing("+", with: ""))!, upper = Double(bounds.1.replacing("+", with: ""))!
        return lower > null || upper < null
    }

    /// Single categories whose ratio lies close to 1, so that some bounds fall within 0.005 of it
    /// and some p-values within 0.0005 of 0.05 (rich 1361-1381 of 4000 against plain 307-312).
    static func reports() -> [EngagementReport] {
        var reports: [EngagementReport] = []
        let cases = stride(from: 300, through: 420, by: 3).map { (rich: 1400, plain: $0) }
            + (0...5).map { (rich: 1361 + 4 * $0, plain: 307 + $0) }
        for (rich, plain) in cases {
            let rows = [
                ReportFixture.engagement("news", .rich, "image", notifications: 4000, delivered: 4000, displayed: 4000,
                                         expanded: rich, opened: rich),
                ReportFixture.engagement("news", .plain, "none", notifications: 1000, delivered: 1000, displayed: 1000,
                                         expanded: plain, opened: plain),
            ]
            reports.append(EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt))
        }
        return reports
    }

    @Test func theHeadlinesIntervalAgreesWithItsWord() throws {
        var checked = 0
        for report in Self.reports() {
            let summary = try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
            guard let ratio = summary.riskRatio else { continue }
            let printed = try #require(Self.bounds(in: summary.headline, after: "as often as plain ones"))
            #expect(Self.printedClear(printed, null: 1) == ratio.isSignificant,
                    "\(summary.headline) (interval \(ratio.interval))")
            // And the p beside it: never "p = 0.050" beside "significant".
            let pText = try #require(summary.headline.firstMatch(of: /\(p ([<=]) ([0-9.]+);/))
            let printedP = Double(pText.output.2)!
            #expect((pText.output.1 == "<" || printedP < 0.05) == ratio.isSignificant, "\(summary.headline) (p \(ratio.pValue))")
            #expect((Double(ReportFormat.pValue(ratio.pValue).replacing("<", with: ""))! < 0.05
                     || ReportFormat.pValue(ratio.pValue).hasPrefix("<")) == ratio.isSignificant,
                    "\(ReportFormat.pValue(ratio.pValue)) (p \(ratio.pValue))")
            // The table's cell too: `1.11x [1.004, 1.23] *`.
            let cell = try #require(Self.bounds(in: ReportFormat.ratio(ratio), after: "x"))
            #expect(Self.printedClear(cell, null: 1) == ratio.isSignificant, "\(ReportFormat.ratio(ratio))")
            checked += 1
        }
        #expect(checked > 40)
    }

    @Test func aRowsRelativeIntervalAgreesWithItsFlag() throws {
        for report in Self.reports() {
            let metric = try #require(report.groups.first?.metrics.first)
            guard let significant = metric.significant else { continue }
            let printed = try #require(Self.bounds(in: ReportFormat.relativeLift(metric), after: "%"))
            #expect(Self.printedClear(printed, null: 0) == significant,
                    "\(ReportFormat.relativeLift(metric)) \(ReportFormat.flags(metric)) (interval \(metric.relativeInterval!))")
        }
    }

    /// A rate that is not 0 or 1 is never printed as one: 9,996 of 10,000 is not everyone.
    @Test func ratesNearZeroOrOneAreNotPrintedAsThem() {
        #expect(ReportFormat.percent(0.9996) == ">99.9%")
        #expect(ReportFormat.percent(1.0 / 5000) == "<0.1%")
        #expect(ReportFormat.percent(0.996, decimals: 0) == ">99%")
        #expect(ReportFormat.percent(0.004, decimals: 0) == "<1%")
        #expect(ReportFormat.percent(1) == "100.0%" && ReportFormat.percent(0) == "0.0%")
        #expect(ReportFormat.percent(0.9994) == "99.9%" && ReportFormat.percent(0.0006) == "0.1%")
        #expect(ReportFormat.percent(nil) == ReportFormat.missing)
    }

    /// 20 million displays a side, 25.04% against 25.00% expanded: 1.0016x, +0.04 pp, both
    /// significant. Rounded to two places and one they read "1.00x" and "+0.0 pp", no effect,
    /// beside "significant".
    @Test func aSignificantEstimateNeverReadsAsNoEffect() throws {
        let rows = [
            ReportFixture.engagement("news", .rich, "image", notifications: 20_000_000, delivered: 20_000_000,
                                     displayed: 20_000_000, expanded: 5_008_000, opened: 5_008_000),
            ReportFixture.engagement("news", .plain, "none", notifications: 20_000_000, delivered: 20_000_000,
                                     displayed: 20_000_000, expanded: 5_000_000, opened: 5_000_000),
        ]
        let report = EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
        let summary = try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
        let ratio = try #require(summary.riskRatio), difference = try #require(summary.riskDifference)
        #expect(ratio.isSignificant && difference.isSignificant)
        let headline = try #require(summary.headline.firstMatch(of: /([0-9.]+)x as often as plain/))
        #expect(Double(headline.output.1) != 1, "\(summary.headline)")
        let cell = ReportFormat.ratio(ratio)
        #expect(Double(cell.prefix { $0 != "x" }) != 1, "\(cell)")
        let points = ReportFormat.difference(difference)
        #expect(Double(points.prefix { $0 != " " }.replacing("+", with: "")) != 0, "\(points)")
    }

    /// A billion displays a side and a lift of 0.0088%: significant bounds lie within 5e-7 of
    /// 1x and 5e-6 of 0, where four extra places still printed them as `1.000000` and `0.00000`
    /// beside "significant".
    @Test func aBoundOfABillionDisplaysNeverReadsAsNoEffect() throws {
        var nearNoEffect = 0
        for expanded in stride(from: 500_043_700, through: 500_044_000, by: 20) {
            let rows = [
                ReportFixture.engagement("news", .rich, "image", notifications: 1_000_000_000, delivered: 1_000_000_000,
                                         displayed: 1_000_000_000, expanded: expanded, opened: expanded),
                ReportFixture.engagement("news", .plain, "none", notifications: 1_000_000_000, delivered: 1_000_000_000,
                                         displayed: 1_000_000_000, expanded: 500_000_000, opened: 500_000_000),
            ]
            let report = EngagementReport.build(engagement: rows, generatedAt: ReportFixture.generatedAt)
            let summary = try #require(report.stratified.first { $0.metric == .engagement(.expansion) })
            let ratio = try #require(summary.riskRatio), difference = try #require(summary.riskDifference)
            let printed = try #require(Self.bounds(in: summary.headline, after: "as often as plain ones"))
            #expect(Self.printedClear(printed, null: 1) == ratio.isSignificant, "\(summary.headline)")
            let cell = try #require(Self.bounds(in: ReportFormat.ratio(ratio), after: "x"))
            #expect(Self.printedClear(cell, null: 1) == ratio.isSignificant, "\(ReportFormat.ratio(ratio))")
            let points = try #require(Self.bounds(in: ReportFormat.difference(difference), after: "pp"))
            #expect(Self.printedClear(points, null: 0) == difference.isSignificant, "\(ReportFormat.difference(difference))")
            if ratio.isSignificant, ratio.interval.lower - 1 < 5e-7 { nearNoEffect += 1 }
        }
        #expect(nearNoEffect > 0)
        #expect(ReportFormat.bound(1.000000006, 2, noEffect: 1) == "1.00000001")
        #expect(ReportFormat.signedBound(6e-7, 1, noEffect: 0) == "+0.000001")
        #expect(ReportFormat.bound(-2e-30, 1, noEffect: 0) == "-2e-30")
        #expect(ReportFormat.pValue(0.049_999_99) == "0.04999999")
    }
}
