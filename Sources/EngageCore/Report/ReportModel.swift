/// Counts of the notifications of one actual presentation in one group: the same counts the
/// read model keeps per bucket, summed over the group's rows.
public typealias PresentationCounts = EngagementCounts

/// A rate of the report. The denominator of every rate is the number of *displayed*
/// notifications of the presentation at hand: a notification that was never shown could not be
/// expanded, actioned, opened, dismissed or replied to through its banner.
public enum ReportMetric: Sendable, Hashable {
    /// One of the funnel's rates (`EngagementMetric.reported`).
    case engagement(EngagementMetric)
    /// Took the app-defined action with this ID / displayed (the `.action` grouping).
    case customAction(String)

    /// The rates of the category, attachment and day groupings.
    public static let standard = EngagementMetric.reported.map(ReportMetric.engagement)

    /// Stable machine name: the metric's wire name (`expansion`, `action`, ...) or `action:ID`.
    public var key: String {
        switch self {
        case .engagement(let metric): metric.rawValue
        case .customAction(let id): "action:" + id
        }
    }

    /// Name for people.
    public var label: String {
        switch self {
        case .engagement(let metric): metric.label
        case .customAction(let id): "action " + id
        }
    }

    /// The numerator in `counts`.
    public func successes(in counts: PresentationCounts) -> Int {
        switch self {
        case .engagement(let metric): counts.funnel.successes(metric)
        case .customAction(let id): counts.actions[id, default: 0]
        }
    }

    /// The denominator in `counts`.
    public func trials(in counts: PresentationCounts) -> Int {
        switch self {
        case .engagement(let metric): counts.funnel.trials(metric)
        case .customAction: counts[.displayed]
        }
    }
}

/// `successes / trials` with its Wilson score interval; `rate` and `interval` are nil when there
/// are no trials, or when the counts are inconsistent (more successes than trials, negative).
public struct RateEstimate: Sendable, Hashable {
    public let successes: Int
    public let trials: Int
    public let rate: Double?
    public let interval: ConfidenceInterval?

    init(successes: Int, trials: Int, confidence: Double) {
        self.successes = successes
        self.trials = trials
        if trials > 0, let proportion = try? Proportion(successes: successes, trials: trials) {
            rate = proportion.rate
            interval = proportion.wilsonInterval(confidence: confidence)
        } else {
            rate = nil
            interval = nil
        }
    }
}

/// One rate for rich and plain presentations side by side, and rich against plain.
///
/// The row's one method is the ratio `rich / plain` (`ratio`): `relativeLift`,
/// `relativeInterval`, `pValue` and `significant` all come from it, so the p-value is the test
/// the relative interval inverts and `significant` is read off that interval (issue 16 points 2
/// and 3). A ratio interval stays above 0, so the relative interval never goes below -100%.
///
/// With the device as the unit (`unit == .device`, the read model's device moments of the
/// group, issue 16 point 4) the ratio is a Wald interval on its log and the absolute lift a Wald
/// interval, both with the device-clustered variance (`ClusteredProportionComparison`), and
/// `designEffect` says how much larger that variance is than the binomial one. Otherwise the
/// ratio has Miettinen & Nurminen's score interval and the absolute lift Newcombe's.
///
/// Fields that cannot be computed from the data are nil, never NaN:
///  - `absoluteLift` (rich − plain) and its Newcombe hybrid score interval need both rates;
///  - `ratio`, and with it the relative lift, its interval, `pValue` and `significant`, also
///    need plain successes (a ratio over a plain rate of 0 is undefined).
public struct MetricComparison: Sendable, Hashable {
    public let metric: ReportMetric
    public let rich: RateEstimate
    public let plain: RateEstimate
    /// Numerator among notifications that were never displayed (no rate: no denominator).
    public let notDisplayedCount: Int
    public let absoluteLift: Double?
    public let absoluteInterval: ConfidenceInterval?
    /// rich / plain with the Miettinen-Nurminen score interval and the p-value of its test.
    public let ratio: EffectEstimate?
    public let relativeLift: Double?
    public let relativeInterval: ConfidenceInterval?
    public let pValue: Double?
    public let significant: Bool?
    /// `ProportionComparison.isSmallSample`: a side with fewer than 30 displayed notifications,
    /// or fewer than 5 successes or failures; with the device as the unit also a side with fewer
    /// than 30 devices (`ClusteredProportionComparison.isSmallSample`). True when a side has none.
    public let smallSample: Bool
    /// What the intervals and the p-value take as independent.
    public let unit: InferenceUnit
    /// With the device as the unit: the clustered variance of the difference rich − plain over
    /// its binomial variance (1: devices behave like independent notifications); else nil.
    public let designEffect: Double?

    /// The method of `ratio`, `pValue` and `significant` with notifications as the unit.
    public static let method = RatioIntervalMethod.miettinenNurminenScore

    /// `devices`: the group's device moments (nil: notifications are the unit); used only when
    /// they describe the same notifications as the counts.
    init(metric: ReportMetric, rich richCounts: PresentationCounts, plain plainCounts: PresentationCounts,
         notDisplayed: PresentationCounts, devices: CategoryDeviceMoments? = nil, confidence: Double) {
        self.metric = metric
        rich = RateEstimate(successes: metric.successes(in: richCounts), trials: metric.trials(in: richCounts),
                            confidence: confidence)
        plain = RateEstimate(successes: metric.successes(in: plainCounts), trials: metric.trials(in: plainCounts),
                             confidence: confidence)
        notDisplayedCount = metric.successes(in: notDisplayed)

        guard rich.rate != nil, plain.rate != nil,
              let variant = try? Proportion(successes: rich.successes, trials: rich.trials),
              let control = try? Proportion(successes: plain.successes, trials: plain.trials)
        else {
            absoluteLift = nil
            absoluteInterval = nil
            ratio = nil
            relativeLift = nil
            relativeInterval = nil
            pValue = nil
            significant = nil
            smallSample = true
            unit = .notification
            designEffect = nil
            return
        }
        let comparison = ProportionComparison(variant: variant, control: control)
        absoluteLift = comparison.absoluteDifference
        let clustered = devices?.comparison(metric, rich: richCounts, plain: plainCounts)
        if let clustered, let difference = try? clustered.difference(confidence: confidence),
           let clusteredRatio = try? clustered.ratio(confidence: confidence) {
            absoluteInterval = difference.effect.interval
            ratio = clusteredRatio.effect
            unit = .device
            designEffect = difference.designEffect
            smallSample = clustered.isSmallSample
        } else {
            absoluteInterval = comparison.newcombeInterval(confidence: confidence)
            ratio = try? comparison.ratioEstimate(Self.method, confidence: confidence)
            unit = .notification
            designEffect = nil
            smallSample = comparison.isSmallSample
        }
        relativeLift = ratio?.relativeLift
        relativeInterval = ratio?.relativeInterval
        pValue = ratio?.pValue
        significant = ratio?.isSignificant
    }
}

/// What a group is: a category (nil in the total over all categories), and with the
/// `.attachment` or `.day` grouping the attachment kind or the day.
public struct ReportGroupKey: Sendable, Hashable, Comparable {
    public let category: String?
    public let attachmentKind: String?
    public let day: UTCDay?

    public init(category: String?, attachmentKind: String? = nil, day: UTCDay? = nil) {
        self.category = category
        self.attachmentKind = attachmentKind
        self.day = day
    }

    /// `news`, `news · image`, `news · 2026-11-29`, `all categories (crude)`: the total pools
    /// every category's counts, which the stratified summary does not (`StratifiedMetricSummary`).
    public var label: String {
        var parts = [category ?? "all categories (crude)"]
        if let attachmentKind { parts.append(attachmentKind) }
        if let day { parts.append(day.description) }
        return parts.joined(separator: " · ")
    }

    /// Categories ascending (the total last), then attachment kinds in display order, then days.
    public static func < (a: ReportGroupKey, b: ReportGroupKey) -> Bool {
        if a.category != b.category {
            guard let left = a.category else { return false }
            guard let right = b.category else { return true }
            return left < right
        }
        if a.attachmentKind != b.attachmentKind {
            return AttachmentOrder.precedes(a.attachmentKind ?? "", b.attachmentKind ?? "")
        }
        return (a.day?.daysSinceEpoch ?? .min) < (b.day?.daysSinceEpoch ?? .min)
    }
}

/// Rich, plain and never-displayed notifications of one group, and its rates compared.
public struct ReportGroup: Sendable, Hashable {
    public let key: ReportGroupKey
    public let rich: PresentationCounts
    public let plain: PresentationCounts
    /// Notifications without a `displayed` event (`ObservedPresentation.unknown`).
    public let notDisplayed: PresentationCounts
    /// The five standard rates, or one per action ID with the `.action` grouping.
    public let metrics: [MetricComparison]
}

/// The 50th, 95th and 99th percentile of a merged latency histogram, in milliseconds; nil
/// when no latency was recorded.
public struct LatencyPercentiles: Sendable, Hashable {
    public let count: Int64
    public let p50: Double?
    public let p95: Double?
    public let p99: Double?

    init(_ histogram: LatencyHistogram) {
        count = histogram.totalCount
        p50 = histogram.quantile(0.5)
        p95 = histogram.quantile(0.95)
        p99 = histogram.quantile(0.99)
    }
}

/// The notification service extension's behaviour in one category and attachment kind, or in a
/// total (nil category: all categories; nil attachment kind: all kinds).
///
/// Shares are of `delivered`; rates and means are nil when their denominator is 0.
public struct TelemetrySummary: Sendable, Hashable {
    public let category: String?
    public let attachmentKind: String?
    public let delivered: Int
    /// Delivered notifications per outcome, every outcome present (0 when none).
    public let outcomes: [DeliveryOutcome: Int]
    public let timeWillExpire: Int
    public let cacheHits: Int
    public let networkFetches: Int
    /// The sum of the sizes reported, held at Int64.max (what JSON and CSV print);
    /// `meanBytes` divides the exact sum.
    public let totalBytes: Int64
    public let bytesReported: Int
    let exactTotalBytes: Int128
    public let download: LatencyPercentiles
    public let processing: LatencyPercentiles

    init(category: String?, attachmentKind: String?, rows: [TelemetryRow]) {
        self.category = category
        self.attachmentKind = attachmentKind
        var outcomes = Dictionary(uniqueKeysWithValues: DeliveryOutcome.allCases.map { ($0, 0) })
        var delivered = 0, timeWillExpire = 0, cacheHits = 0, networkFetches = 0, bytesReported = 0
        var totalBytes: Int128 = 0
        var download = LatencyHistogram()
        var processing = LatencyHistogram()
        // Sums of stored counts, held at the largest Int rather than trapping (see `addingSaturated`).
        for row in rows {
            delivered.addSaturated(row.delivered)
            for (outcome, count) in row.outcomes { outcomes[outcome, default: 0].addSaturated(count) }
            timeWillExpire.addSaturated(row.timeWillExpire)
            cacheHits.addSaturated(row.cacheHits)
            networkFetches.addSaturated(row.networkFetches)
            totalBytes += row.bytes
            bytesReported.addSaturated(row.bytesReported)
            mergeHistogram(row.downloadHistogram, into: &download)
            mergeHistogram(row.processingHistogram, into: &processing)
        }
        self.delivered = delivered
        self.outcomes = outcomes
        self.timeWillExpire = timeWillExpire
        self.cacheHits = cacheHits
        self.networkFetches = networkFetches
        self.totalBytes = Int64(clamping: totalBytes)
        exactTotalBytes = totalBytes
        self.bytesReported = bytesReported
        self.download = LatencyPercentiles(download)
        self.processing = LatencyPercentiles(processing)
    }

    /// `outcomes[outcome] / delivered`.
    public func share(of outcome: DeliveryOutcome) -> Double? {
        delivered > 0 ? Double(outcomes[outcome, default: 0]) / Double(delivered) : nil
    }

    public var timeoutShare: Double? { share(of: .timeout) }
    public var tooLargeShare: Double? { share(of: .tooLarge) }

    /// `cacheHits / (cacheHits + networkFetches)`.
    public var cacheHitRate: Double? {
        let fetched = cacheHits.addingSaturated(networkFetches)
        return fetched > 0 ? Double(cacheHits) / Double(fetched) : nil
    }

    /// The exact sum of the sizes over `bytesReported` (not `totalBytes`, which may be held).
    public var meanBytes: Double? {
        bytesReported > 0 ? Double(exactTotalBytes) / Double(bytesReported) : nil
    }
}

/// Adds `histogram` to `total`. Histograms of the same layout add bucket by bucket; one of
/// another layout (never written by this project) is re-recorded at its buckets' representative
/// values, which keeps the report from stopping at the cost of a second rounding.
private func mergeHistogram(_ histogram: LatencyHistogram, into total: inout LatencyHistogram) {
    guard !histogram.isEmpty else { return }
    if total.isEmpty {
        total = histogram
        return
    }
    if histogram.layout == total.layout {
        total.merge(histogram)
        return
    }
    for (index, count) in histogram.counts.enumerated() where count > 0 {
        total.record(histogram.layout.representative(ofIndex: index), count: count)
    }
}
