@testable import EngageCore

/// Hand-made read-model rows for the report tests.
enum ReportFixture {
    static let day1 = UTCDay(year: 2026, month: 11, day: 27)!
    static let day2 = UTCDay(year: 2026, month: 11, day: 28)!
    /// 2026-11-29T20:00:00Z.
    static let generatedAt = Timestamp(rfc3339: "2026-11-29T20:00:00Z")!

    static func engagement(_ category: String, _ presentation: ObservedPresentation, _ kind: String,
                           day: UTCDay = day1, app: String = "app", notifications: Int, delivered: Int,
                           displayed: Int, expanded: Int = 0, actioned: Int = 0, opened: Int = 0,
                           dismissed: Int = 0, replied: Int = 0) -> EngagementRow {
        EngagementRow(appID: app, category: category, presentation: presentation, attachmentKind: kind, day: day,
                      counts: FunnelCounts([.notifications: notifications, .delivered: delivered, .displayed: displayed,
                                            .expanded: expanded, .actioned: actioned, .opened: opened,
                                            .dismissed: dismissed, .replied: replied]))
    }

    static func histogram(_ values: [(Double, Int64)]) -> LatencyHistogram {
        var histogram = LatencyHistogram()
        for (value, count) in values { histogram.record(value, count: count) }
        return histogram
    }

    /// news: rich 81/263 expanded against plain 48/300, split over two days and two kinds;
    /// promo: a small rich sample and no displayed plain notification at all.
    static let engagementRows: [EngagementRow] = [
        engagement("news", .rich, "image", day: day1, notifications: 150, delivered: 145, displayed: 140,
                   expanded: 50, actioned: 20, opened: 30, dismissed: 50, replied: 3),
        engagement("news", .rich, "gif", day: day2, notifications: 130, delivered: 125, displayed: 123,
                   expanded: 31, actioned: 20, opened: 30, dismissed: 50, replied: 2),
        engagement("news", .plain, "image", day: day1, notifications: 170, delivered: 165, displayed: 160,
                   expanded: 28, actioned: 15, opened: 25, dismissed: 80, replied: 0),
        engagement("news", .plain, "none", day: day2, notifications: 150, delivered: 145, displayed: 140,
                   expanded: 20, actioned: 15, opened: 20, dismissed: 70, replied: 0),
        engagement("news", .unknown, "image", day: day2, notifications: 20, delivered: 12, displayed: 0),
        engagement("promo", .rich, "video", day: day1, notifications: 22, delivered: 21, displayed: 20,
                   expanded: 3, actioned: 0, opened: 2, dismissed: 10, replied: 0),
        engagement("promo", .plain, "unknown", day: day1, notifications: 4, delivered: 0, displayed: 0),
    ]

    static let actionRows: [ActionCountRow] = [
        ActionCountRow(appID: "app", category: "news", presentation: .rich, attachmentKind: "image", day: day1,
                       actionID: "save", count: 12),
        ActionCountRow(appID: "app", category: "news", presentation: .rich, attachmentKind: "gif", day: day2,
                       actionID: "save", count: 9),
        ActionCountRow(appID: "app", category: "news", presentation: .plain, attachmentKind: "image", day: day1,
                       actionID: "save", count: 10),
        ActionCountRow(appID: "app", category: "news", presentation: .rich, attachmentKind: "image", day: day1,
                       actionID: "share", count: 19),
        ActionCountRow(appID: "app", category: "news", presentation: .plain, attachmentKind: "none", day: day2,
                       actionID: "share", count: 20),
        ActionCountRow(appID: "app", category: "news", presentation: .unknown, attachmentKind: "image", day: day2,
                       actionID: "share", count: 1),
    ]

    static let telemetryRows: [TelemetryRow] = [
        TelemetryRow(appID: "app", category: "news", attachmentKind: "image", day: day1, delivered: 200,
                     outcomes: [.attached: 180, .timeout: 12, .tooLarge: 8], timeWillExpire: 12, cacheHits: 60,
                     networkFetches: 140, bytes: 36_000_000, bytesReported: 180,
                     downloadHistogram: histogram([(120, 100), (400, 70), (2000, 10)]),
                     processingHistogram: histogram([(150, 100), (500, 88), (29_000, 12)])),
        TelemetryRow(appID: "app", category: "news", attachmentKind: "image", day: day2, delivered: 100,
                     outcomes: [.attached: 100], cacheHits: 40, networkFetches: 60, bytes: 20_000_000,
                     bytesReported: 100, downloadHistogram: histogram([(100, 100)]),
                     processingHistogram: histogram([(130, 100)])),
        TelemetryRow(appID: "app", category: "news", attachmentKind: "none", day: day2, delivered: 150,
                     outcomes: [.notRequested: 150], processingHistogram: histogram([(5, 150)])),
        TelemetryRow(appID: "app", category: "promo", attachmentKind: "video", day: day1, delivered: 21,
                     outcomes: [.attached: 15, .downloadFailed: 6], networkFetches: 21, bytes: 0, bytesReported: 0,
                     downloadHistogram: histogram([(3000, 15)]), processingHistogram: histogram([(3200, 21)])),
    ]
}
