/// The rows a report is built from. The caller reads them from the engagement read models (one
/// row per stored bucket) and passes them in; the report itself does no I/O.
///
/// Attachment kinds are the wire spellings of `AttachmentKind` ("image", "gif", "video",
/// "audio", "none") or "unknown" for a notification whose kind is not known yet. Other
/// spellings are kept as they are and sorted after the known ones.

/// Engagement counts of one bucket: app, category, actual presentation, attachment kind, day.
public struct EngagementRow: Sendable, Hashable {
    public var appID: String
    public var category: String
    public var presentation: ObservedPresentation
    public var attachmentKind: String
    public var day: UTCDay
    /// The stages the read model keeps (`FunnelStage.keptPerBucket`); the others are 0.
    public var counts: FunnelCounts

    public init(appID: String, category: String, presentation: ObservedPresentation, attachmentKind: String,
                day: UTCDay, counts: FunnelCounts = FunnelCounts()) {
        self.appID = appID
        self.category = category
        self.presentation = presentation
        self.attachmentKind = attachmentKind
        self.day = day
        self.counts = counts
    }
}

/// Notifications of one engagement bucket on which the app-defined action `actionID` was taken.
public struct ActionCountRow: Sendable, Hashable {
    public var appID: String
    public var category: String
    public var presentation: ObservedPresentation
    public var attachmentKind: String
    public var day: UTCDay
    public var actionID: String
    public var count: Int

    public init(appID: String, category: String, presentation: ObservedPresentation, attachmentKind: String,
                day: UTCDay, actionID: String, count: Int) {
        self.appID = appID
        self.category = category
        self.presentation = presentation
        self.attachmentKind = attachmentKind
        self.day = day
        self.actionID = actionID
        self.count = count
    }
}

/// What the notification service extension did in one bucket: app, category, the kind it
/// attached ("none" when it attached nothing), delivery day.
public struct TelemetryRow: Sendable, Hashable {
    public var appID: String
    public var category: String
    public var attachmentKind: String
    public var day: UTCDay
    public var delivered: Int
    /// Delivered notifications per outcome.
    public var outcomes: [DeliveryOutcome: Int]
    public var timeWillExpire: Int
    public var cacheHits: Int
    public var networkFetches: Int
    /// Sum of the attachment sizes reported, over `bytesReported` notifications: exact, as the
    /// read model keeps it (up to 2^53 bytes an event pass Int64 within a thousand events).
    public var bytes: Int128
    public var bytesReported: Int
    public var downloadHistogram: LatencyHistogram
    public var processingHistogram: LatencyHistogram

    public init(appID: String, category: String, attachmentKind: String, day: UTCDay, delivered: Int = 0,
                outcomes: [DeliveryOutcome: Int] = [:], timeWillExpire: Int = 0, cacheHits: Int = 0,
                networkFetches: Int = 0, bytes: Int128 = 0, bytesReported: Int = 0,
                downloadHistogram: LatencyHistogram = LatencyHistogram(),
                processingHistogram: LatencyHistogram = LatencyHistogram()) {
        self.appID = appID
        self.category = category
        self.attachmentKind = attachmentKind
        self.day = day
        self.delivered = delivered
        self.outcomes = outcomes
        self.timeWillExpire = timeWillExpire
        self.cacheHits = cacheHits
        self.networkFetches = networkFetches
        self.bytes = bytes
        self.bytesReported = bytesReported
        self.downloadHistogram = downloadHistogram
        self.processingHistogram = processingHistogram
    }
}
