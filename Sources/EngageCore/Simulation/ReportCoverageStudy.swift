/// How often the report's 95% intervals cover the truth when devices differ persistently in how
/// readily they engage (issue 16 point 4): many simulated datasets, each folded in memory into
/// the read model's per-category counts and device moments (`DeviceMomentFold`'s
/// `CategoryDeviceMoments`, and the categories' `CategoryPairDeviceMoments`), reported with the
/// device as the unit (with and without the pairs) and with notifications as the unit (the
/// naive intervals), and each interval checked against the
/// simulator's true difference and ratio.
///
/// A dataset: `devices` devices, each with a propensity drawn once (`DevicePropensity`), a
/// network drawn once (fast or slow, even odds, independent of the propensity) and
/// `notificationsPerDevice` notifications; each notification's category is drawn by the
/// categories' weights, its presentation rich with the category's `richShare` on a fast device
/// and `slowRichFactor` times that on a slow one (attachments that miss the time budget fall
/// back to plain, so a device's notifications lean to one presentation), and its engagement
/// nested at the device's own rates as `TrafficSimulator` draws it. Were presentation drawn
/// apart from the device, a device's propensity would mostly cancel out of rich − plain (both
/// sides share it) and the naive intervals would do nearly as well. The truth of a category is
/// the population's rates (`DevicePropensity.expectedRates`); the truth of the adjusted figures
/// is the Mantel-Haenszel estimand with the expected weights `w_k = E n1_k E n2_k / (E n1_k + E n2_k)`.
public struct ReportCoverageStudy: Sendable {
    public var categories: [SimulatedCategory]
    /// Per category, the chance a notification is displayed rich on a fast device.
    public var richShares: [Double]
    /// The chance on a slow device, as a share of the fast device's.
    public var slowRichFactor: Double
    public var devices: Int
    public var notificationsPerDevice: Int
    public var propensity: DevicePropensity

    public init(categories: [SimulatedCategory] = SimulationScenario.standard.categories,
                richShares: [Double] = [0.95, 0.6, 0.9, 0.8], slowRichFactor: Double = 0.1, devices: Int = 300,
                notificationsPerDevice: Int = 40, propensity: DevicePropensity = DevicePropensity(spread: 1.5)) {
        self.categories = categories
        self.richShares = richShares
        self.slowRichFactor = slowRichFactor
        self.devices = devices
        self.notificationsPerDevice = notificationsPerDevice
        self.propensity = propensity
    }

    /// Intervals that covered the truth, of those checked, per unit and metric.
    public struct Coverage: Sendable, Hashable {
        public var covered = 0
        public var intervals = 0

        /// As a proportion, for its Clopper-Pearson bounds.
        public var proportion: Proportion { Proportion(validatedSuccesses: covered, trials: intervals) }
        public var rate: Double { intervals == 0 ? 0 : Double(covered) / Double(intervals) }

        mutating func record(_ interval: ConfidenceInterval?, truth: Double) {
            intervals += 1
            if let interval, interval.lower <= truth, truth <= interval.upper { covered += 1 }
        }
    }

    /// One metric's coverage: the categories' rows (difference and ratio) and the adjusted
    /// figures (Mantel-Haenszel risk difference and ratio), with each unit (and for the device,
    /// with and without the cross moments of categories); and the mean design effect of the
    /// categories' differences.
    public struct MetricCoverage: Sendable, Hashable {
        public var metric: EngagementMetric
        public var deviceDifference = Coverage(), deviceRatio = Coverage()
        public var naiveDifference = Coverage(), naiveRatio = Coverage()
        /// Each device counted once across categories (with the categories' pair moments).
        public var deviceAdjustedDifference = Coverage(), deviceAdjustedRatio = Coverage()
        /// Each category's devices taken as distinct (without pair moments).
        public var separateAdjustedDifference = Coverage(), separateAdjustedRatio = Coverage()
        public var naiveAdjustedDifference = Coverage(), naiveAdjustedRatio = Coverage()
        public var designEffectSum = 0.0
        public var designEffects = 0

        public var meanDesignEffect: Double { designEffects == 0 ? 0 : designEffectSum / Double(designEffects) }
    }

    /// Runs `datasets` datasets from `seed`, each from its own random stream.
    public func run(datasets: Int, seed: UInt64) -> [MetricCoverage] {
        var results = EngagementMetric.reported.map { MetricCoverage(metric: $0) }
        let truth = truths()
        for dataset in 0..<datasets {
            let (rows, moments, pairs) = simulate(seed: seed, dataset: UInt64(dataset))
            let clustered = EngagementReport.build(engagement: rows, devices: moments, devicePairs: pairs,
                                                   generatedAt: Timestamp(microsecondsSinceEpoch: 0))
            let separate = EngagementReport.build(engagement: rows, devices: moments, generatedAt: Timestamp(microsecondsSinceEpoch: 0))
            let naive = EngagementReport.build(engagement: rows, generatedAt: Timestamp(microsecondsSinceEpoch: 0))
            for (index, metric) in EngagementMetric.reported.enumerated() {
                for category in categories where truth.categories[category.name]![metric] != nil {
                    let (difference, ratio) = truth.categories[category.name]![metric]!
                    let device = clustered.groups.first { $0.key.category == category.name }?.metrics.first { $0.metric == .engagement(metric) }
                    let plain = naive.groups.first { $0.key.category == category.name }?.metrics.first { $0.metric == .engagement(metric) }
                    results[index].deviceDifference.record(device?.unit == .device ? device?.absoluteInterval : nil, truth: difference)
                    results[index].deviceRatio.record(device?.unit == .device ? device?.ratio?.interval : nil, truth: ratio)
                    results[index].naiveDifference.record(plain?.absoluteInterval, truth: difference)
                    results[index].naiveRatio.record(plain?.ratio?.interval, truth: ratio)
                    if let effect = device?.designEffect {
                        results[index].designEffectSum += effect
                        results[index].designEffects += 1
                    }
                }
                if let (difference, ratio) = truth.adjusted[metric] {
                    let device = clustered.stratified.first { $0.metric == .engagement(metric) }
                    let plain = naive.stratified.first { $0.metric == .engagement(metric) }
                    let apart = separate.stratified.first { $0.metric == .engagement(metric) }
                    results[index].deviceAdjustedDifference.record(device?.unit == .device ? device?.riskDifference?.interval : nil,
                                                                   truth: difference)
                    results[index].deviceAdjustedRatio.record(device?.unit == .device ? device?.riskRatio?.interval : nil, truth: ratio)
                    results[index].separateAdjustedDifference.record(apart?.unit == .device ? apart?.riskDifference?.interval : nil,
                                                                     truth: difference)
                    results[index].separateAdjustedRatio.record(apart?.unit == .device ? apart?.riskRatio?.interval : nil, truth: ratio)
                    results[index].naiveAdjustedDifference.record(plain?.riskDifference?.interval, truth: difference)
                    results[index].naiveAdjustedRatio.record(plain?.riskRatio?.interval, truth: ratio)
                }
            }
        }
        return results
    }

    /// One dataset's read-model rows (one per category and presentation), device moments and
    /// cross moments of every two categories.
    public func simulate(seed: UInt64, dataset: UInt64)
        -> (rows: [EngagementRow], moments: [CategoryDeviceMoments], pairs: [CategoryPairDeviceMoments]) {
        var random = SimulationRandom(seed: seed, stream: 11, index: dataset)
        let weights = categories.map(\.weight)
        var perCategory: [[DeviceCategoryCounts]] = Array(repeating: [], count: categories.count)
        var perDevice: [DeviceMomentFold.Key: DeviceCategoryCounts] = [:]
        for device in 0..<devices {
            let shift = propensity.shift(z: random.normal())
            let richFactor = random.chance(0.5) ? 1 : slowRichFactor
            var counts = Array(repeating: DeviceCategoryCounts(), count: categories.count)
            for _ in 0..<notificationsPerDevice {
                let k = random.weighted(weights)
                let rich = random.chance(richShares[k] * richFactor)
                let rates = DevicePropensity.rates(categories[k].rates(for: rich ? .rich : .plain), shift: shift)
                var reached: [FunnelStage: Int] = [.notifications: 1, .delivered: 1, .displayed: 1]
                if rich { reached[.richDisplayed] = 1 }
                if random.chance(rates.expanded) {
                    reached[.expanded] = 1
                    if rates.expanded > 0, random.chance(rates.actioned / rates.expanded) {
                        reached[.actioned] = 1
                        if rates.actioned > 0, random.chance(rates.replied / rates.actioned) { reached[.replied] = 1 }
                    }
                }
                let resolution = random.unit()
                if resolution < rates.opened { reached[.opened] = 1 } else if resolution < rates.opened + rates.dismissed { reached[.dismissed] = 1 }
                counts[k].add(FunnelCounts(reached), presentation: rich ? .rich : .plain)
            }
            for k in categories.indices where !counts[k].isZero {
                perCategory[k].append(counts[k])
                perDevice[DeviceMomentFold.Key(appID: "simulated", category: categories[k].name, deviceID: String(device))] = counts[k]
            }
        }
        var rows: [EngagementRow] = []
        var moments: [CategoryDeviceMoments] = []
        for (k, category) in categories.enumerated() {
            let total = perCategory[k].reduce(DeviceCategoryCounts(), +)
            for (presentation, counts) in [(ObservedPresentation.rich, total.rich), (.plain, total.plain)] where counts != .zero {
                rows.append(EngagementRow(appID: "simulated", category: category.name, presentation: presentation,
                                          attachmentKind: presentation == .rich ? "image" : "none",
                                          day: UTCDay(daysSinceEpoch: 0), counts: counts))
            }
            moments.append(CategoryDeviceMoments(appID: "simulated", category: category.name, devices: perCategory[k]))
        }
        return (rows, moments, CategoryPairDeviceMoments.pairs(of: perDevice))
    }

    /// The true difference and ratio rich against plain per category and metric (a rate of 0
    /// left out: the ratio is undefined), and of the adjusted figures (every category weighs in).
    func truths() -> (categories: [String: [EngagementMetric: (Double, Double)]], adjusted: [EngagementMetric: (Double, Double)]) {
        var perCategory: [String: [EngagementMetric: (Double, Double)]] = [:]
        var adjusted: [EngagementMetric: (Double, Double)] = [:]
        let totalWeight = categories.map(\.weight).reduce(0, +)
        for metric in EngagementMetric.reported {
            var weightSum = 0.0, weightedDifference = 0.0, weightedRich = 0.0, weightedPlain = 0.0
            for (k, category) in categories.enumerated() {
                let rich = propensity.expectedRates(category.rates(for: .rich))[metric.numerator]
                let plain = propensity.expectedRates(category.rates(for: .plain))[metric.numerator]
                if plain > 0 && rich > 0 { perCategory[category.name, default: [:]][metric] = (rich - plain, rich / plain) }
                let expected = Double(devices * notificationsPerDevice) * category.weight / totalWeight
                let share = richShares[k] * (1 + slowRichFactor) / 2
                let n1 = expected * share, n2 = expected * (1 - share)
                let w = n1 * n2 / (n1 + n2)
                weightSum += w
                weightedDifference += w * (rich - plain)
                weightedRich += w * rich
                weightedPlain += w * plain
            }
            if weightSum > 0 && weightedPlain > 0 && weightedRich > 0 { adjusted[metric] = (weightedDifference / weightSum, weightedRich / weightedPlain) }
        }
        return (perCategory, adjusted)
    }
}
