/// One rate of the report compared between rich and plain *within* each category and then
/// combined across categories: the report's headline wherever it summarises more than one
/// category (issue 16 point 1). The crude comparison (every category's counts pooled) stays
/// beside it, labelled crude; when the two disagree in direction or in significance,
/// `crudeDisagreement` says how and every rendering says so in words (Simpson's paradox).
///
/// Figures (docs/report.md, "The adjusted answer"):
///  - `riskRatio`: Mantel-Haenszel risk ratio with Greenland & Robins' variance of its log, the
///    headline ("1.06x as often");
///  - `riskDifference`: Mantel-Haenszel risk difference with Sato's variance;
///  - `cochranMantelHaenszel`: the CMH test of "no difference in any category";
///  - `homogeneity`: Cochran's Q on the categories' log ratios (the headline's own scale), with
///    `disagreeing` the categories whose own ratio interval leaves out the summary ratio.
///
/// A category without rich or without plain displays carries no comparison: it is listed in
/// `excluded` and contributes nothing. With no category left every stratified figure is nil and
/// `unavailable` says why ("not enough data"); a figure that cannot be computed for the data
/// (no plain successes anywhere, a variance of 0) is nil with its reason in `unavailable` too.
public struct StratifiedMetricSummary: Sendable, Hashable {
    /// One category's own comparison, as a row of the forest plot.
    public struct Category: Sendable, Hashable {
        public let name: String
        public let rich: RateEstimate
        public let plain: RateEstimate
        /// rich / plain with the row method of `MetricComparison`; nil without plain successes.
        public let ratio: EffectEstimate?

        /// Rich successes and no plain ones: no ratio, as it is unbounded.
        var isUnbounded: Bool { ratio == nil && rich.successes > 0 && plain.successes == 0 }

        /// The side of "no effect" the category is on: its ratio's, or up when unbounded.
        var direction: Int {
            if let ratio { return ratio.direction }
            return isUnbounded ? 1 : 0
        }
    }

    public let metric: ReportMetric
    /// Categories with rich and plain displays, by name.
    public let categories: [Category]
    /// Categories left out, and why.
    public let excluded: [ExcludedStratum]
    public let riskRatio: EffectEstimate?
    public let riskDifference: EffectEstimate?
    public let cochranMantelHaenszel: ChiSquareTest?
    /// Cochran's Q on log ratios; nil with fewer than two categories.
    public let homogeneity: HomogeneityTest?
    /// Compared categories Cochran's Q leaves out, and why: with the device as the unit, those
    /// with a side at 0 or at all successes (`zeroCell`), named even when too few are left for
    /// the test; none with notifications as the unit (a zero cell gets 0.5 added instead).
    public let homogeneityExcluded: [ExcludedStratum]
    /// Categories whose ratio interval leaves out the summary ratio.
    public let disagreeing: [String]
    /// The pooled counts' ratio with the row method (the total group's `ratio`).
    public let crude: EffectEstimate?
    /// Nil when crude and adjusted point the same way with the same significance, or when they were
    /// not compared (`crudeCompared`).
    public let crudeDisagreement: CrudeAdjustedDisagreement?
    /// Whether crude and adjusted were compared at all (`crudeDisagreement` nil then means they agree).
    public let crudeCompared: Bool
    /// Why a figure is missing: "not enough data: ..."; nil when every figure is there.
    public let unavailable: String?
    /// What the risk ratio, risk difference, Cochran's Q and the categories' ratios take as
    /// independent: devices when every category has device moments matching its counts.
    public let unit: InferenceUnit
    /// With the device as the unit: the clustered variance of the Mantel-Haenszel risk
    /// difference and of the log risk ratio over their binomial variances.
    public let designEffect: DesignEffect?

    /// True when the categories compared, pooled, have a side with fewer than 30 displayed
    /// notifications or fewer than 5 successes or failures (`ProportionComparison.isSmallSample`),
    /// or, with the device as the unit, fewer than 30 devices on a side even counting a device
    /// once per category; true when no category is compared. The adjusted intervals are normal
    /// approximations, rough on so little, and the headline says so.
    public let smallSample: Bool
    /// True when the strata are each app's categories (`app/category`): the report spans
    /// several apps, whose categories are compared apart rather than pooled.
    public let acrossApps: Bool

    /// Clustered over binomial variance of the adjusted figures.
    public struct DesignEffect: Sendable, Hashable {
        public let riskDifference: Double
        public let riskRatio: Double
    }

    /// `strata` are the categories' rich and plain counts and device moments (nil: none kept);
    /// `pairs` the cross moments of two categories' devices (none: each category's devices taken
    /// as distinct); `crude` the total's comparison.
    init(metric: ReportMetric,
         strata: [(name: String, rich: PresentationCounts, plain: PresentationCounts, devices: CategoryDeviceMoments?)],
         pairs: [CategoryPairDeviceMoments] = [], crude: MetricComparison?, confidence: Double, acrossApps: Bool = false) {
        self.metric = metric
        self.acrossApps = acrossApps
        let stratified = StratifiedComparison(strata: strata.map { stratum in
            Stratum(name: stratum.name,
                    variant: Self.proportion(metric, stratum.rich), control: Self.proportion(metric, stratum.plain))
        })
        let included = Set(stratified.included.map(\.name))
        // Only the categories the summary includes need device moments: one without rich or
        // plain displays contributes nothing, and must not turn the device unit off for the rest.
        let clustered = Self.clustered(metric, strata.filter { included.contains($0.name) }, pairs)
        categories = strata.filter { included.contains($0.name) }.map { stratum in
            let comparison = MetricComparison(metric: metric, rich: stratum.rich, plain: stratum.plain,
                                              notDisplayed: PresentationCounts(),
                                              devices: clustered == nil ? nil : stratum.devices, confidence: confidence)
            return Category(name: stratum.name, rich: comparison.rich, plain: comparison.plain, ratio: comparison.ratio)
        }
        excluded = stratified.excluded
        self.crude = crude?.ratio

        var problems: [String] = []
        // A variance of 0 has a different cause with each variance: only the included
        // categories' rates, and whether the figure's variance is clustered by device, tell which.
        let everyRateZeroOrOne = stratified.included.allSatisfy { stratum in
            [stratum.variant, stratum.control].allSatisfy { $0.successes == 0 || $0.successes == $0.trials }
        }
        func attempt<T>(_ figure: String, variance: ZeroVarianceCause = .binomial,
                        _ compute: () throws(StatisticsError) -> T) -> T? {
            do {
                return try compute()
            } catch {
                problems.append(figure + ": " + Self.reason(error, variance: everyRateZeroOrOne ? .everyRateZeroOrOne : variance))
                return nil
            }
        }
        if stratified.included.isEmpty {
            riskRatio = nil
            riskDifference = nil
            cochranMantelHaenszel = nil
            homogeneity = nil
            homogeneityExcluded = []
            unavailable = "not enough data: no category has both rich and plain displayed notifications"
            unit = .notification
            designEffect = nil
        } else if let clustered {
            let ratio = attempt("risk ratio", variance: .clusteredByDevice) { () throws(StatisticsError) in
                try clustered.mantelHaenszelRiskRatio(confidence: confidence)
            }
            let difference = attempt("risk difference", variance: .clusteredByDevice) { () throws(StatisticsError) in
                try clustered.mantelHaenszelRiskDifference(confidence: confidence)
            }
            riskRatio = ratio?.effect
            riskDifference = difference?.effect
            cochranMantelHaenszel = attempt("CMH test") { () throws(StatisticsError) in
                try stratified.cochranMantelHaenszelTest()
            }
            homogeneity = stratified.included.count < 2 ? nil : attempt("homogeneity", variance: .clusteredCovariance) { () throws(StatisticsError) in
                try clustered.homogeneityTest(.ratio)
            }
            homogeneityExcluded = stratified.included.count < 2 ? [] : clustered.homogeneityExclusions
            unavailable = problems.isEmpty ? nil : "not enough data for " + problems.joined(separator: "; ")
            unit = .device
            designEffect = ratio.flatMap { ratio in
                difference.map { DesignEffect(riskDifference: $0.designEffect, riskRatio: ratio.designEffect) }
            }
        } else {
            riskRatio = attempt("risk ratio") { () throws(StatisticsError) in
                try stratified.mantelHaenszelRiskRatio().greenlandRobinsEstimate(confidence: confidence)
            }
            riskDifference = attempt("risk difference") { () throws(StatisticsError) in
                try stratified.mantelHaenszelRiskDifference().satoEstimate(confidence: confidence)
            }
            cochranMantelHaenszel = attempt("CMH test") { () throws(StatisticsError) in
                try stratified.cochranMantelHaenszelTest()
            }
            homogeneity = stratified.included.count < 2 ? nil : attempt("homogeneity") { () throws(StatisticsError) in
                try stratified.cochranQ(.ratio)
            }
            homogeneityExcluded = homogeneity?.excluded ?? []
            unavailable = problems.isEmpty ? nil : "not enough data for " + problems.joined(separator: "; ")
            unit = .notification
            designEffect = nil
        }
        smallSample = Self.isSmallSample(stratified, devices: unit == .device ? clustered : nil)
        if let riskRatio {
            disagreeing = categories.filter { $0.ratio.map { !$0.interval.contains(riskRatio.estimate) } ?? false }
                .map(\.name)
        } else {
            disagreeing = []
        }
        // One category and none left out pools nothing: the adjusted estimate is the crude one,
        // and only the intervals' method (and unit) can differ, which is no paradox of the mix.
        // (A category left out with rich or plain notifications only is still in the crude.)
        if let crude = self.crude, let riskRatio, stratified.included.count >= 2 || Self.poolsALeftOutCategory(excluded) {
            crudeCompared = true
            crudeDisagreement = CrudeAdjustedDisagreement(crude: crude, adjusted: riskRatio)
        } else {
            crudeCompared = false
            crudeDisagreement = nil
        }
    }

    /// Whether the crude total holds notifications of a category the adjusted figure left out (one
    /// with rich or plain displays only; one with none adds nothing to the crude either).
    public var poolsALeftOutCategory: Bool { Self.poolsALeftOutCategory(excluded) }

    static func poolsALeftOutCategory(_ excluded: [ExcludedStratum]) -> Bool {
        excluded.contains { $0.reason != .noTrials }
    }

    /// Whether the categories disagree beyond chance (Cochran's Q below `alpha`).
    public var categoriesDisagree: Bool {
        (homogeneity?.test.pValue).map { $0 < EngagementReport.alpha } ?? false
    }

    /// Categories whose own ratio points to the other side of "no effect" than the summary (one
    /// with no plain successes and some rich ones, no ratio, points up).
    public var pointingTheOtherWay: [String] {
        guard let direction = riskRatio?.direction, direction != 0 else { return [] }
        return categories.filter { $0.direction * direction < 0 }.map(\.name)
    }

    /// Categories with rich successes and no plain ones: no ratio (it is unbounded), yet with
    /// notifications as the unit Cochran's Q takes them in (0.5 added to each cell), and one can
    /// be what makes the categories disagree.
    public var unboundedRatios: [String] {
        let leftOutOfQ = Set(homogeneityExcluded.map(\.name))
        return categories.filter { $0.isUnbounded && !leftOutOfQ.contains($0.name) }.map(\.name)
    }

    /// The most categories the device-clustered figures are computed for. Their variance reads a
    /// covariance per pair of categories and Cochran's Q factors a matrix of them (the square and
    /// the cube of the count): 1,000 take a fraction of a second, and an app whose devices sent
    /// 100,000 category names would have taken hundreds of gigabytes. Beyond it notifications are
    /// the unit, as when device moments are missing.
    public static let maximumClusteredCategories = 1_000

    /// The strata with the device as the unit, when every category's device moments describe its
    /// counts and they are at most `maximumClusteredCategories`; nil otherwise (then notifications
    /// are the unit of every figure).
    private static func clustered(
        _ metric: ReportMetric,
        _ strata: [(name: String, rich: PresentationCounts, plain: PresentationCounts, devices: CategoryDeviceMoments?)],
        _ pairs: [CategoryPairDeviceMoments]
    ) -> ClusteredStratifiedComparison? {
        guard strata.count <= maximumClusteredCategories else { return nil }
        var clustered: [ClusteredStratum] = []
        var shared: [SharedDeviceMoments] = []
        for stratum in strata {
            guard let comparison = stratum.devices?.comparison(metric, rich: stratum.rich, plain: stratum.plain) else {
                return nil
            }
            clustered.append(ClusteredStratum(name: stratum.name, variant: comparison.variant, control: comparison.control))
            if let moments = comparison.sharedDevices {
                shared.append(SharedDeviceMoments(first: BucketReference(stratum: stratum.name, arm: .variant),
                                                  second: BucketReference(stratum: stratum.name, arm: .control),
                                                  moments: moments))
            }
        }
        // A device in two categories is one cluster: its contributions to both covary.
        if case .engagement(let engagement) = metric {
            let names = Set(strata.map(\.name))
            for pair in pairs where names.contains(pair.first) && names.contains(pair.second) && pair.first != pair.second {
                if let cross = pair.cross[engagement] { shared += cross.shared(first: pair.first, second: pair.second) }
            }
        }
        return clustered.isEmpty ? nil : try? ClusteredStratifiedComparison(strata: clustered, sharedDevices: shared)
    }

    /// The small-sample rule on the included categories' pooled counts and, with the device as the
    /// unit, on their devices: the sum over categories counts a device once per category, so a sum
    /// below the minimum is certainly too few.
    private static func isSmallSample(_ stratified: StratifiedComparison, devices: ClusteredStratifiedComparison?) -> Bool {
        guard !stratified.included.isEmpty else { return true }
        let pooled = ProportionComparison(variant: Proportion(summing: stratified.included.map(\.variant)),
                                          control: Proportion(summing: stratified.included.map(\.control)))
        guard let devices else { return pooled.isSmallSample }
        let richDevices = devices.strata.reduce(0) { $0.addingSaturated($1.variant.devices) }
        let plainDevices = devices.strata.reduce(0) { $0.addingSaturated($1.control.devices) }
        return pooled.isSmallSample || min(richDevices, plainDevices) < ClusteredProportionComparison.minimumDevices
    }

    private static func proportion(_ metric: ReportMetric, _ counts: PresentationCounts) -> Proportion {
        let trials = metric.trials(in: counts)
        let successes = metric.successes(in: counts)
        // Counts from the read model hold successes within trials; anything else carries nothing.
        return (try? Proportion(successes: successes, trials: trials)) ?? Proportion(validatedSuccesses: 0, trials: 0)
    }

    /// What a variance of 0 says about the data, by the variance that was 0.
    enum ZeroVarianceCause {
        /// Every included group's rate is 0 or 1: no variance of any kind is left.
        case everyRateZeroOrOne
        /// A variance over notifications (binomial, Sato's, CMH's) with rates between 0 and 1.
        case binomial
        /// A device-clustered variance: it is 0 when every device has its group's rate,
        /// whatever that rate is.
        case clusteredByDevice
        /// The device-clustered covariance of the categories' ratios (Cochran's Q), which is
        /// singular when a category's devices do not vary, or when categories vary together.
        case clusteredCovariance
    }

    static func reason(_ error: StatisticsError, variance: ZeroVarianceCause) -> String {
        switch error.code {
        case .zeroBaseline: "no plain successes in any category"
        case .undefinedLogRatio: "no rich successes in any category"
        case .zeroVariance:
            switch variance {
            case .everyRateZeroOrOne: "no variation (every rate 0 or 1)"
            case .binomial: "no variation (a variance of 0)"
            case .clusteredByDevice: "no variation between devices (every device has its group's rate)"
            case .clusteredCovariance: "no variation between devices to compare categories by "
                + "(their clustered covariance is singular, as when every device has its group's rate)"
            }
        case .tooFewStrata: "too few categories"
        default: error.description
        }
    }
}
