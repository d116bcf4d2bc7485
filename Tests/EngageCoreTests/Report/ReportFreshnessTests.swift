import Testing
@testable import EngageCore

@Suite struct ReportFreshnessTests {
    @Test func theSummarySaysWhenAndHowFarBehind() {
        let at = Timestamp(rfc3339: "2026-11-29T19:59:57Z")!
        #expect(ReportFreshness(checkpointAt: at, lagEvents: 0, lagSeconds: 0).summary == "2026-11-29T19:59:57Z (up to date)")
        #expect(ReportFreshness(checkpointAt: at, lagEvents: 1, lagSeconds: 0.04).summary == "2026-11-29T19:59:57Z (1 event behind, oldest 0.0 s)")
        #expect(ReportFreshness(checkpointAt: at, lagEvents: 1204, lagSeconds: 2.75).summary == "2026-11-29T19:59:57Z (1204 events behind, oldest 2.8 s)")
        #expect(ReportFreshness(checkpointAt: nil, lagEvents: 3, lagSeconds: 12).summary == "never (no events folded yet) (3 events behind, oldest 12.0 s)")
        #expect(ReportFreshness(checkpointAt: at, lagEvents: 99_999, lagSeconds: 9).summary == "2026-11-29T19:59:57Z (99999 events behind, oldest 9.0 s)")
        #expect(ReportFreshness(checkpointAt: at, lagEvents: ReportFreshness.lagEventsCountedUpTo, lagSeconds: 9).summary
                == "2026-11-29T19:59:57Z (at least 100000 events behind, oldest 9.0 s)")
    }

    @Test func everyRenderingCarriesIt() {
        var report = EngagementReportTests.report()
        report.currentAsOf = ReportFreshness(checkpointAt: Timestamp(rfc3339: "2026-11-29T19:59:57Z")!, lagEvents: 7, lagSeconds: 1.5)
        #expect(report.renderTable().contains("\ncurrent    as of 2026-11-29T19:59:57Z (7 events behind, oldest 1.5 s)\n"))
        #expect(String(decoding: report.renderJSON(), as: UTF8.self)
            .contains(#""current_as_of":{"checkpoint_at":"2026-11-29T19:59:57Z","lag_events":7,"lag_seconds":1.5}"#))
        var meta: [String: String] = [:]
        for line in report.renderCSV().split(separator: "\r\n") {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            if fields[0] == "meta" { meta[fields[4]] = fields[EngagementReport.csvHeader.firstIndex(of: "value")!] }
        }
        #expect(meta["current_as_of:checkpoint_at"] == "2026-11-29T19:59:57Z")
        #expect(meta["current_as_of:lag_events"] == "7")
        #expect(meta["current_as_of:lag_seconds"] == "1.5")
        #expect(report.renderHTML().contains("<dt>Current as of</dt><dd>2026-11-29T19:59:57Z (7 events behind, oldest 1.5 s)</dd>"))
        report.currentAsOf = nil
        #expect(String(decoding: report.renderJSON(), as: UTF8.self).contains(#""current_as_of":null,"#))
        #expect(!report.renderTable().contains("current    as of"))
    }

    /// A read model a minute or more behind is said so beside the headline of the table and the
    /// page, where a reader takes the answer from; seconds behind (a projector at work) is not.
    @Test func aReadModelFarBehindIsSaidBesideTheHeadline() throws {
        var report = EngagementReportTests.report()
        let at = Timestamp(rfc3339: "2026-11-29T19:59:57Z")!
        #expect(ReportFreshness(checkpointAt: at, lagEvents: 7, lagSeconds: 59.9).headlineWarning == nil)
        #expect(ReportFreshness(checkpointAt: at, lagEvents: 0, lagSeconds: 0).headlineWarning == nil)
        #expect(ReportFreshness(checkpointAt: at, lagEvents: 1, lagSeconds: 60).headlineWarning
                == "NOT CURRENT: 1 event of the log is not in these figures, the oldest recorded 60 seconds ago: the projector is behind or stopped.")
        let behind = ReportFreshness(checkpointAt: at, lagEvents: ReportFreshness.lagEventsCountedUpTo, lagSeconds: 5_400)
        let warning = "NOT CURRENT: at least 100000 events of the log are not in these figures, the oldest recorded 90 minutes ago: the projector is behind or stopped."
        #expect(behind.headlineWarning == warning)
        #expect([119.9, 120, 7_199, 7_200, 172_799, 172_800, .infinity, .nan].map(ReportFreshness.duration)
                == ["119 seconds", "2 minutes", "119 minutes", "2 hours", "47 hours", "2 days", "11574074 days", "0 seconds"])

        report.currentAsOf = behind
        let table = report.renderTable()
        let said = try #require(table.range(of: "! NOT CURRENT: at least 100000 events"))
        let headline = try #require(table.range(of: "\n- "))
        #expect(said.lowerBound < headline.lowerBound, "before the first headline sentence")
        let html = report.renderHTML()
        let inPage = try #require(html.range(of: "<p class=\"paradox\">\(warning)</p><ul class=\"headline\">"))
        #expect(inPage.lowerBound > html.range(of: "The answer, adjusted for")!.lowerBound)

        report.currentAsOf = ReportFreshness(checkpointAt: at, lagEvents: 7, lagSeconds: 1.5)
        #expect(!report.renderTable().contains("NOT CURRENT") && !report.renderHTML().contains("NOT CURRENT"))
    }
}
