/// Do rich push notifications earn more engagement than plain ones, per category, and how does
/// the notification service extension behave? The pure model of that report and its renderings
/// (`renderTable`, `renderJSON`, `renderCSV`, `renderHTML`); the caller queries the read
/// models and passes the rows in.
///
/// Rich and plain are the *actual* presentations (`ObservedPresentation`), so the comparison is
/// observational; every rendering carries `caveat`. Rates are per displayed notification of the
/// presentation (see `ReportMetric`), with Wilson score intervals at `confidence`.
public struct EngagementReport: Sendable, Hashable {
    public let generatedAt: Timestamp
    public let grouping: ReportGrouping
    public let filters: ReportFilters
    /// One per group, ordered by `ReportGroupKey`.
    public let groups: [ReportGroup]
    /// All rows that passed the filters, as one group (category nil): the crude comparison,
    /// which pools categories whose mixes of rich and plain differ.
    public let total: ReportGroup
    /// Per metric of `total`, rich against plain within each category combined across
    /// categories: the headline (whatever the grouping, its strata are the categories).
    public let stratified: [StratifiedMetricSummary]
    /// Extension telemetry per category and attachment kind, ordered by category then kind.
    public let telemetry: [TelemetrySummary]
    /// Extension telemetry per attachment kind across categories (category nil).
    public let telemetryByAttachment: [TelemetrySummary]
    /// All telemetry rows that passed the filters (category and attachment kind nil).
    public let telemetryTotal: TelemetrySummary
    /// How current the read model was when read; nil for a report not read from one (a simulation).
    public var currentAsOf: ReportFreshness?

    /// Confidence of every interval.
    public static let confidence = 0.95
    /// Significance level of `MetricComparison.significant`.
    public static let alpha = 0.05

    /// Shown by every rendering.
    public static let caveat = "Rich versus plain here is by actual presentation, which is observational: "
        + "devices on slow networks fall back to plain notifications and may engage differently, so a "
        + "difference is not necessarily caused by the attachment. The randomized comparison comes from experiments."

    /// What the rates are divided by.
    public static let denominatorNote = "Rates are per displayed notification of the same presentation "
        + "(\(numerators) / displayed); intervals are 95% Wilson. Comparisons take the device as the unit where "
        + "the read model keeps device moments (a category's rows without a day or attachment-kind filter, and the "
        + "adjusted figures): absolute lift rich − plain and relative lift rich / plain − 1 with Wald intervals of "
        + "the device-clustered variance (delta method over devices; the design effect is that variance over the "
        + "binomial one), p and significance from the same test. Elsewhere notifications are the unit: absolute "
        + "lift with a Newcombe interval; relative lift with the Miettinen-Nurminen score interval of the ratio, "
        + "and p and significance from the same score test."

    /// What the adjusted figures are.
    public static let stratifiedNote = "The adjusted figures compare rich with plain within each category and "
        + "combine the categories: Mantel-Haenszel risk ratio (Greenland-Robins interval of its log) and risk "
        + "difference (Sato's variance), each with the p of its own interval; the Cochran-Mantel-Haenszel test of "
        + "no difference in any category; Cochran's Q on the categories' log ratios for whether they disagree. "
        + "The crude figures pool all categories and mislead when rich and plain come from different mixes of "
        + "categories. Adjusting removes confounding by category only; the comparison stays observational."

    /// "expanded, actioned, opened, dismissed or replied".
    private static var numerators: String {
        let names = EngagementMetric.reported.map(\.numerator.name)
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    public init(generatedAt: Timestamp, grouping: ReportGrouping, filters: ReportFilters, groups: [ReportGroup],
                total: ReportGroup, stratified: [StratifiedMetricSummary], telemetry: [TelemetrySummary],
                telemetryByAttachment: [TelemetrySummary], telemetryTotal: TelemetrySummary) {
        self.generatedAt = generatedAt
        self.grouping = grouping
        self.filters = filters
        self.groups = groups
        self.total = total
        self.stratified = stratified
        self.telemetry = telemetry
        self.telemetryByAttachment = telemetryByAttachment
        self.telemetryTotal = telemetryTotal
    }

    /// Builds the report from read-model rows. Rows that the filters reject are left out
    /// everywhere. `actions` are used by the `.action` grouping only (the other groupings count
    /// any action through the rows' `actioned` count). `devices` are the read model's device
    /// moments per app and category (over all days and attachment kinds): with them, and no day
    /// or attachment-kind filter, the categories' comparisons and the adjusted answer take the
    /// device as the unit (`InferenceUnit`). `devicePairs` are the cross moments of two
    /// categories' devices: with them the adjusted answer's variance counts a device once across
    /// categories; without them each category's devices are taken as distinct.
    public static func build(engagement: [EngagementRow], actions: [ActionCountRow] = [],
                             telemetry: [TelemetryRow] = [], devices: [CategoryDeviceMoments] = [],
                             devicePairs: [CategoryPairDeviceMoments] = [],
                             grouping: ReportGrouping = .category,
                             filters: ReportFilters = ReportFilters(), generatedAt: Timestamp) -> EngagementReport {
        let engagement = engagement.filter {
            filters.admits(appID: $0.appID, category: $0.category, attachmentKind: $0.attachmentKind, day: $0.day)
        }
        let actions = grouping == .action ? actions.filter {
            filters.admits(appID: $0.appID, category: $0.category, attachmentKind: $0.attachmentKind, day: $0.day)
        } : []
        let telemetry = telemetry.filter {
            filters.admits(appID: $0.appID, category: $0.category, attachmentKind: $0.attachmentKind, day: $0.day)
        }

        func key(category: String, attachmentKind: String, day: UTCDay) -> ReportGroupKey {
            switch grouping {
            case .category, .action: ReportGroupKey(category: category)
            case .attachment: ReportGroupKey(category: category, attachmentKind: attachmentKind)
            case .day: ReportGroupKey(category: category, day: day)
            }
        }

        // The adjusted answer's strata are categories within one app. A report over several apps
        // (the command line without --app) keeps each app's category apart: one category of two
        // apps can mix rich and plain in different shares and engage at different rates, and
        // pooling them would confound the answer with the app.
        let strata = StrataNaming(apps: Set(engagement.map(\.appID)).union(actions.map(\.appID)))
        var accumulators: [ReportGroupKey: GroupAccumulator] = [:]
        var totalAccumulator = GroupAccumulator()
        var categoryAccumulators: [String: GroupAccumulator] = [:]
        for row in engagement {
            let groupKey = key(category: row.category, attachmentKind: row.attachmentKind, day: row.day)
            accumulators[groupKey, default: GroupAccumulator()].add(row)
            categoryAccumulators[strata.name(app: row.appID, category: row.category), default: GroupAccumulator()].add(row)
            totalAccumulator.add(row)
        }
        for row in actions {
            let groupKey = key(category: row.category, attachmentKind: row.attachmentKind, day: row.day)
            accumulators[groupKey, default: GroupAccumulator()].add(row)
            categoryAccumulators[strata.name(app: row.appID, category: row.category), default: GroupAccumulator()].add(row)
            totalAccumulator.add(row)
        }
        // Device moments cover every day and attachment kind of a category: they describe a
        // category's counts only when neither is filtered.
        // `clusters` per category (the groups' rows, apps pooled), `stratumClusters` per stratum.
        let clusters: [String: CategoryDeviceMoments]
        let stratumClusters: [String: CategoryDeviceMoments]
        let clusterPairs: [CategoryPairDeviceMoments]
        if filters.from == nil && filters.through == nil && filters.attachmentKinds.isEmpty {
            let admitted = devices.filter { filters.appIDs.isEmpty || filters.appIDs.contains($0.appID) }
            clusters = Dictionary(grouping: admitted, by: \.category).mapValues { parts in
                CategoryDeviceMoments.merged(parts, category: parts[0].category)
            }
            stratumClusters = Dictionary(grouping: admitted) { strata.name(app: $0.appID, category: $0.category) }
                .mapValues { parts in CategoryDeviceMoments.merged(parts, category: parts[0].category) }
            let admittedPairs = devicePairs.filter { filters.appIDs.isEmpty || filters.appIDs.contains($0.appID) }
                .map(strata.renamed)
            clusterPairs = Dictionary(grouping: admittedPairs) { [$0.first, $0.second] }
                .sorted { $0.key.lexicographicallyPrecedes($1.key) }
                .compactMap { CategoryPairDeviceMoments.merged($0.value) }
        } else {
            clusters = [:]
            stratumClusters = [:]
            clusterPairs = []
        }
        let groups = accumulators.keys.sorted().map { key in
            let devices = key.attachmentKind == nil && key.day == nil ? key.category.flatMap { clusters[$0] } : nil
            return accumulators[key]!.group(key: key, grouping: grouping, devices: devices)
        }
        let total = totalAccumulator.group(key: ReportGroupKey(category: nil), grouping: grouping)
        let strataCounts = categoryAccumulators.keys.sorted().map { name in
            (name: name, rich: categoryAccumulators[name]!.rich, plain: categoryAccumulators[name]!.plain,
             devices: stratumClusters[name])
        }
        let stratified = total.metrics.map { comparison in
            StratifiedMetricSummary(metric: comparison.metric, strata: strataCounts, pairs: clusterPairs, crude: comparison,
                                    confidence: Self.confidence, acrossApps: strata.acrossApps)
        }

        struct TelemetryKey: Hashable {
            var category: String
            var attachmentKind: String

            static func precedes(_ a: TelemetryKey, _ b: TelemetryKey) -> Bool {
                a.category != b.category ? a.category < b.category : AttachmentOrder.precedes(a.attachmentKind, b.attachmentKind)
            }
        }
        let byCategory = Dictionary(grouping: telemetry) {
            TelemetryKey(category: $0.category, attachmentKind: $0.attachmentKind)
        }
        let telemetrySummaries = byCategory.keys.sorted(by: TelemetryKey.precedes).map {
            TelemetrySummary(category: $0.category, attachmentKind: $0.attachmentKind, rows: byCategory[$0]!)
        }
        let byKind = Dictionary(grouping: telemetry, by: \.attachmentKind)
        let kindSummaries = byKind.keys.sorted(by: AttachmentOrder.precedes)
            .map { TelemetrySummary(category: nil, attachmentKind: $0, rows: byKind[$0]!) }

        return EngagementReport(
            generatedAt: generatedAt, grouping: grouping, filters: filters, groups: groups, total: total,
            stratified: stratified, telemetry: telemetrySummaries, telemetryByAttachment: kindSummaries,
            telemetryTotal: TelemetrySummary(category: nil, attachmentKind: nil, rows: telemetry))
    }
}

/// The adjusted answer's strata: the categories, or with rows of several apps each app's
/// categories apart, named `app/category`.
private struct StrataNaming {
    let acrossApps: Bool

    init(apps: Set<String>) { acrossApps = apps.count > 1 }

    func name(app: String, category: String) -> String { acrossApps ? app + "/" + category : category }

    /// Pair moments are per app: their categories renamed to the strata's names.
    func renamed(_ pair: CategoryPairDeviceMoments) -> CategoryPairDeviceMoments {
        var pair = pair
        pair.first = name(app: pair.appID, category: pair.first)
        pair.second = name(app: pair.appID, category: pair.second)
        return pair
    }
}

/// Sums of one group's rows while the report is built.
private struct GroupAccumulator {
    var rich = PresentationCounts()
    var plain = PresentationCounts()
    var notDisplayed = PresentationCounts()

    mutating func add(_ row: EngagementRow) {
        switch row.presentation {
        case .rich: rich.funnel = rich.funnel.addingSaturated(row.counts)
        case .plain: plain.funnel = plain.funnel.addingSaturated(row.counts)
        case .unknown: notDisplayed.funnel = notDisplayed.funnel.addingSaturated(row.counts)
        }
    }

    mutating func add(_ row: ActionCountRow) {
        switch row.presentation {
        // A stored count may hold anything (a hand edit): sums are held at the bound, never trapping.
        case .rich: rich.actions[row.actionID, default: 0].addSaturated(row.count)
        case .plain: plain.actions[row.actionID, default: 0].addSaturated(row.count)
        case .unknown: notDisplayed.actions[row.actionID, default: 0].addSaturated(row.count)
        }
    }

    func group(key: ReportGroupKey, grouping: ReportGrouping, devices: CategoryDeviceMoments? = nil) -> ReportGroup {
        let metrics: [ReportMetric]
        if grouping == .action {
            let ids = Set(rich.actions.keys).union(plain.actions.keys).union(notDisplayed.actions.keys)
            metrics = ids.sorted().map(ReportMetric.customAction)
        } else {
            metrics = ReportMetric.standard
        }
        return ReportGroup(
            key: key, rich: rich, plain: plain, notDisplayed: notDisplayed,
            metrics: metrics.map {
                MetricComparison(metric: $0, rich: rich, plain: plain, notDisplayed: notDisplayed, devices: devices,
                                 confidence: EngagementReport.confidence)
            })
    }
}
