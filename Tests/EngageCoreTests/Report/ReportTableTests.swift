import Testing
@testable import EngageCore

/// The whole table for a small report, character for character.
@Suite struct ReportTableTests {
    /// news compares rich 81/263 against plain 48/300 expansions; sport has no plain and weather no
    /// rich notification displayed; one telemetry row.
    static func report() -> EngagementReport {
        EngagementReport.build(
            engagement: [
                ReportFixture.engagement("news", .rich, "image", notifications: 270, delivered: 265, displayed: 263,
                                         expanded: 81, actioned: 30, opened: 52, dismissed: 100, replied: 4),
                ReportFixture.engagement("news", .plain, "none", notifications: 310, delivered: 305, displayed: 300,
                                         expanded: 48, actioned: 21, opened: 45, dismissed: 150, replied: 0),
                ReportFixture.engagement("news", .unknown, "image", notifications: 9, delivered: 5, displayed: 0),
                ReportFixture.engagement("sport", .rich, "gif", notifications: 5, delivered: 5, displayed: 5,
                                         expanded: 5, opened: 1),
                ReportFixture.engagement("weather", .plain, "none", notifications: 3, delivered: 3, displayed: 3),
            ],
            telemetry: [
                TelemetryRow(appID: "app", category: "news", attachmentKind: "image", day: ReportFixture.day1,
                             delivered: 265, outcomes: [.attached: 250, .timeout: 10, .tooLarge: 5], timeWillExpire: 10,
                             cacheHits: 50, networkFetches: 200, bytes: 51_200_000, bytesReported: 250,
                             downloadHistogram: ReportFixture.histogram([(100, 200), (900, 50)]),
                             processingHistogram: ReportFixture.histogram([(250, 255), (29_500, 10)])),
            ],
            filters: ReportFilters(appIDs: ["app"], from: ReportFixture.day1),
            generatedAt: ReportFixture.generatedAt)
    }

    @Test func smallReportRendersExactly() {
        let expected = """
        ENGAGEMENT REPORT: rich vs plain notifications
        generated  2026-11-29T20:00:00Z
        grouping   category
        filters    apps: app; days: 2026-11-27 to …

        CAVEAT: Rich versus plain here is by actual presentation, which is observational: devices on slow
        networks fall back to plain notifications and may engage differently, so a difference is not
        necessarily caused by the attachment. The randomized comparison comes from experiments.

        == ADJUSTED FOR CATEGORY: rich vs plain within each category, combined ==
        - Adjusted for category, rich notifications are expanded 1.92x as often as plain ones [1.40, 2.64],
          significant (p < 0.001; 1 category; notifications as the unit). Excluded: sport (no plain
          displays), weather (no rich displays).
        - Adjusted for category, rich notifications are acted on 1.63x as often as plain ones [0.96, 2.78],
          not significant (p = 0.072; 1 category; notifications as the unit). Excluded: sport (no plain
          displays), weather (no rich displays).
        - Adjusted for category, rich notifications are opened 1.32x as often as plain ones [0.92, 1.90],
          not significant (p = 0.136; 1 category; notifications as the unit). Excluded: sport (no plain
          displays), weather (no rich displays).
        - Adjusted for category, rich notifications are dismissed 0.76x as often as plain ones [0.63, 0.92],
          significant (p = 0.005; 1 category; notifications as the unit). Excluded: sport (no plain
          displays), weather (no rich displays).
        - Adjusted for category, reply: not enough data for risk ratio: no plain successes in any category.

          rate per displayed  adjusted rich / plain       p  adjusted rich − plain          p   CMH p  categories Q p  crude rich / plain    crude vs adjusted
          expansion           1.92x [1.40, 2.64] *   <0.001  +14.8 pp [+7.8, +21.8] *  <0.001  <0.001               —  2.03x [1.49, 2.77] *  agree
          any action          1.63x [0.96, 2.78]      0.072  +4.4 pp [-0.4, +9.2]       0.072   0.069               —  1.62x [0.95, 2.74]    agree
          open                1.32x [0.92, 1.90]      0.136  +4.8 pp [-1.5, +11.1]      0.137   0.135               —  1.33x [0.93, 1.91]    agree
          dismiss             0.76x [0.63, 0.92] *    0.005  -12.0 pp [-20.1, -3.8] *   0.004   0.004               —  0.75x [0.62, 0.91] *  agree
          reply               —                           —  +1.5 pp [+0.04, +3.0] *    0.044   0.032               —  —                     —

        == news ==
                         rich  plain  not displayed
          notifications   270    310              9
          delivered       265    305              5
          displayed       263    300              0

          rate per displayed  rich               plain              rich − plain            relative                     p  flags
          expansion           30.8% [25.5–36.6]  16.0% [12.3–20.6]  +14.8 pp [+7.8, +21.7]  +92.5% [+40.7, +164.4]  <0.001  significant
          any action          11.4% [8.1–15.8]   7.0% [4.6–10.5]    +4.4 pp [-0.4, +9.4]    +63.0% [-3.7, +176.2]    0.069  —
          open                19.8% [15.4–25.0]  15.0% [11.4–19.5]  +4.8 pp [-1.5, +11.1]   +31.8% [-8.2, +89.3]     0.135  —
          dismiss             38.0% [32.4–44.0]  50.0% [44.4–55.6]  -12.0 pp [-20.0, -3.8]  -24.0% [-37.4, -8.1]     0.004  significant
          reply               1.5% [0.6–3.8]     0.0% [0.0–1.3]     +1.5 pp [-0.05, +3.8]   —                            —  small sample

        == sport ==
                         rich  plain  not displayed
          notifications     5      0              0
          delivered         5      0              0
          displayed         5      0              0

          rate per displayed  rich                 plain  rich − plain  relative  p  flags
          expansion           100.0% [56.6–100.0]  —      —             —         —  small sample
          any action          0.0% [0.0–43.4]      —      —             —         —  small sample
          open                20.0% [3.6–62.4]     —      —             —         —  small sample
          dismiss             0.0% [0.0–43.4]      —      —             —         —  small sample
          reply               0.0% [0.0–43.4]      —      —             —         —  small sample

        == weather ==
                         rich  plain  not displayed
          notifications     0      3              0
          delivered         0      3              0
          displayed         0      3              0

          rate per displayed  rich  plain            rich − plain  relative  p  flags
          expansion           —     0.0% [0.0–56.1]  —             —         —  small sample
          any action          —     0.0% [0.0–56.1]  —             —         —  small sample
          open                —     0.0% [0.0–56.1]  —             —         —  small sample
          dismiss             —     0.0% [0.0–56.1]  —             —         —  small sample
          reply               —     0.0% [0.0–56.1]  —             —         —  small sample

        == all categories (crude) ==
                         rich  plain  not displayed
          notifications   275    313              9
          delivered       270    308              5
          displayed       268    303              0

          rate per displayed  rich               plain              rich − plain            relative                      p  flags
          expansion           32.1% [26.8–37.9]  15.8% [12.2–20.4]  +16.2 pp [+9.3, +23.1]  +102.6% [+48.6, +177.2]  <0.001  significant
          any action          11.2% [8.0–15.5]   6.9% [4.6–10.4]    +4.3 pp [-0.5, +9.2]    +61.5% [-4.6, +173.9]     0.075  —
          open                19.8% [15.4–25.0]  14.9% [11.3–19.3]  +4.9 pp [-1.3, +11.2]   +33.2% [-7.1, +91.0]      0.120  —
          dismiss             37.3% [31.7–43.2]  49.5% [43.9–55.1]  -12.2 pp [-20.1, -4.0]  -24.6% [-38.0, -8.8]      0.003  significant
          reply               1.5% [0.6–3.8]     0.0% [0.0–1.3]     +1.5 pp [-0.1, +3.8]    —                             —  small sample

        == extension telemetry ==
          category        attachment  delivered     attached    timeout  too large  unsupported  download failed  not requested  time will expire
          news            image             265  250 (94.3%)  10 (3.8%)   5 (1.9%)     0 (0.0%)         0 (0.0%)       0 (0.0%)                10
          all categories  image             265  250 (94.3%)  10 (3.8%)   5 (1.9%)     0 (0.0%)         0 (0.0%)       0 (0.0%)                10
          all categories  all kinds         265  250 (94.3%)  10 (3.8%)   5 (1.9%)     0 (0.0%)         0 (0.0%)       0 (0.0%)                10

          category        attachment  download ms p50/p95/p99  processing ms p50/p95/p99  cache hit rate  bytes total  bytes mean
          news            image               100 / 907 / 907          252 / 252 / 29445           20.0%     48.8 MiB   200.0 KiB
          all categories  image               100 / 907 / 907          252 / 252 / 29445           20.0%     48.8 MiB   200.0 KiB
          all categories  all kinds           100 / 907 / 907          252 / 252 / 29445           20.0%     48.8 MiB   200.0 KiB

        NOTE: Rates are per displayed notification of the same presentation (expanded, actioned, opened,
        dismissed or replied / displayed); intervals are 95% Wilson. Comparisons take the device as the unit
        where the read model keeps device moments (a category's rows without a day or attachment-kind
        filter, and the adjusted figures): absolute lift rich − plain and relative lift rich / plain − 1
        with Wald intervals of the device-clustered variance (delta method over devices; the design effect
        is that variance over the binomial one), p and significance from the same test. Elsewhere
        notifications are the unit: absolute lift with a Newcombe interval; relative lift with the
        Miettinen-Nurminen score interval of the ratio, and p and significance from the same score test.
        ADJUSTED: The adjusted figures compare rich with plain within each category and combine the
        categories: Mantel-Haenszel risk ratio (Greenland-Robins interval of its log) and risk difference
        (Sato's variance), each with the p of its own interval; the Cochran-Mantel-Haenszel test of no
        difference in any category; Cochran's Q on the categories' log ratios for whether they disagree. The
        crude figures pool all categories and mislead when rich and plain come from different mixes of
        categories. Adjusting removes confounding by category only; the comparison stays observational.
        Flags: significant means the interval leaves out no effect (p < 0.05); small sample means a side has
        fewer than 30 displayed notifications (with the device as the unit, also fewer than 30 devices) or
        fewer than 5 successes or failures.

        """
        let table = Self.report().renderTable()
        #expect(table == expected)
        if table != expected {
            for (line, (actual, wanted)) in zip(table.split(separator: "\n"), expected.split(separator: "\n")).enumerated()
            where actual != wanted {
                Issue.record("line \(line + 1): \(actual) != \(wanted)")
                break
            }
        }
    }

    @Test func numbersAreFormattedWithoutLocaleOrNegativeZero() {
        #expect(ReportFormat.fixed(0.30798, 3) == "0.308")
        #expect(ReportFormat.fixed(-0.04, 1) == "0.0")
        #expect(ReportFormat.fixed(-12.25, 1) == "-12.3")
        #expect(ReportFormat.fixed(0.05, 0) == "0")
        #expect(ReportFormat.fixed(1234.5, 0) == "1235")
        #expect(ReportFormat.fixed(.nan, 2) == "—")
        #expect(ReportFormat.signed(0.0004, 1) == "0.0")
        #expect(ReportFormat.signed(2, 1) == "+2.0")
        #expect(ReportFormat.pValue(0.0004) == "<0.001")
        #expect(ReportFormat.pValue(0.0625) == "0.063")
        #expect(ReportFormat.bytes(512) == "512 B")
        #expect(ReportFormat.bytes(204_800) == "200.0 KiB")
        #expect(ReportFormat.wrap("aa bb cc dd", width: 5) == ["aa bb", "cc dd"])
    }
}
