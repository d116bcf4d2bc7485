import Foundation

extension ComparedStratum where Group == DeviceMoments {
    /// The pooled counts, as if notifications were independent.
    public var counts: Stratum {
        Stratum(name: name, variant: variant.proportion, control: control.proportion)
    }
}

/// An effect whose interval and p-value use the device-clustered variance, beside the binomial
/// variance of the same estimator (notifications independent).
public struct ClusteredEffect: Hashable, Sendable {
    public let effect: EffectEstimate
    /// Of the difference, or of the log of the ratio.
    public let variance: Double
    public let binomialVariance: Double

    /// Clustered over binomial variance: how much the device's correlation widens the interval
    /// (its square root is the factor on the interval's width).
    public var designEffect: Double { variance / binomialVariance }
}

/// The stratified summaries with the device as the unit.
///
/// The Mantel-Haenszel estimates are those of `StratifiedComparison` on the pooled counts. Their
/// variances follow from the delta method over devices (`DeviceClusteredRates`): conditioning,
/// as Greenland & Robins' and Sato's variances do, on each bucket's trials (so the weights
/// `w = n1 n2 / N` are fixed), each estimate is a smooth function of the buckets' rates,
///
///     RD     = sum_k w_k (p1_k - p2_k) / W                  c(p1_k) =  w_k / W,  c(p2_k) = -w_k / W
///     log RR = log sum_k w_k p1_k - log sum_k w_k p2_k      c(p1_k) =  w_k / R,  c(p2_k) = -w_k / S
///
/// with `W = sum w`, `R = sum w p1`, `S = sum w p2`, and its variance is
/// `sum_a sum_b c_a c_b Cov(p_a, p_b)` with the device-clustered covariances of the bucket
/// rates: a device's notifications in several buckets (rich and plain, or several categories)
/// count together. With one notification per device the variance is the binomial one of the
/// same linearisation: Greenland & Robins' for RD, the large-strata one for log RR. These are
/// large-strata estimators (a few categories, many devices each), which is the report's case.
public struct ClusteredStratifiedComparison: Hashable, Sendable {
    public let strata: [ClusteredStratum]
    public let sharedDevices: [SharedDeviceMoments]
    /// The same strata as counts: included and excluded strata, crude figures, CMH and
    /// Breslow-Day tests.
    public let counts: StratifiedComparison

    /// `sharedDevices` lists the cross moments of buckets that have devices in common (none
    /// listed: no device in two buckets). Throws `invalidCounts` for a pair given twice, a bucket
    /// paired with itself, or a stratum name that is not among `strata` or is repeated.
    public init(strata: [ClusteredStratum], sharedDevices: [SharedDeviceMoments] = []) throws(StatisticsError) {
        guard Set(strata.map(\.name)).count == strata.count else {
            throw StatisticsError(.invalidCounts, detail: "stratum names repeat")
        }
        let names = Set(strata.map(\.name))
        for shared in sharedDevices {
            guard names.contains(shared.first.stratum), names.contains(shared.second.stratum) else {
                throw StatisticsError(.invalidCounts, detail: "cross moments name an unknown stratum")
            }
        }
        self.strata = strata
        self.sharedDevices = sharedDevices
        counts = StratifiedComparison(strata: strata.map(\.counts))
        _ = try rates() // reject repeated pairs now rather than at each use
    }

    public var excluded: [ExcludedStratum] { counts.excluded }

    /// Mantel-Haenszel risk difference with its device-clustered variance; the binomial variance
    /// beside it is Greenland & Robins'. Throws as `StratifiedComparison` does, and
    /// `zeroVariance` when the clustered variance is 0.
    public func mantelHaenszelRiskDifference(confidence: Double = 0.95) throws(StatisticsError) -> ClusteredEffect {
        let summary = try counts.mantelHaenszelRiskDifference()
        let layout = try included()
        let totalWeight = layout.map(\.weight).reduce(0, +)
        let (variance, binomial) = try variances(layout, variantScale: totalWeight, controlScale: totalWeight)
        return ClusteredEffect(
            effect: try EffectEstimate.wald(difference: summary.estimate, variance: variance,
                                            method: .mantelHaenszelDeviceClustered, confidence: confidence),
            variance: variance, binomialVariance: binomial
        )
    }

    /// Mantel-Haenszel risk ratio with the device-clustered variance of its log; the binomial
    /// variance beside it is the large-strata one. Throws as `StratifiedComparison` does, and
    /// `undefinedLogRatio` without variant successes.
    public func mantelHaenszelRiskRatio(confidence: Double = 0.95) throws(StatisticsError) -> ClusteredEffect {
        let summary = try counts.mantelHaenszelRiskRatio()
        let layout = try included()
        let variantSum = layout.map { $0.weight * $0.variantRate }.reduce(0, +)
        let controlSum = layout.map { $0.weight * $0.controlRate }.reduce(0, +)
        guard variantSum > 0 else {
            throw StatisticsError(.undefinedLogRatio, detail: "no variant successes")
        }
        let (variance, binomial) = try variances(layout, variantScale: variantSum, controlScale: controlSum)
        return ClusteredEffect(
            effect: try EffectEstimate.waldOnLog(ratio: summary.estimate, logVariance: variance,
                                                 method: .mantelHaenszelDeviceClustered, confidence: confidence),
            variance: variance, binomialVariance: binomial
        )
    }

    /// Clustered and binomial variances of `sum_k w_k (p1_k / variantScale - p2_k / controlScale)`,
    /// the linearisation of both Mantel-Haenszel estimates.
    private func variances(_ layout: [IncludedStratum], variantScale: Double, controlScale: Double) throws(StatisticsError) -> (Double, Double) {
        let coefficients = layout.flatMap { stratum in
            [(bucket: stratum.variantBucket, coefficient: stratum.weight / variantScale),
             (bucket: stratum.controlBucket, coefficient: -stratum.weight / controlScale)]
        }
        let rates = try rates()
        return (rates.covariance(coefficients, coefficients), rates.binomialVariance(coefficients))
    }

    /// Do the strata's own effects on `scale` (differences, or log ratios) differ more than
    /// chance allows, devices counted as the unit? The generalized Cochran's Q
    /// (`homogeneityStatistic`) with the full device-clustered covariance of the strata's
    /// effects (devices in several strata correlate them); without shared devices between strata
    /// it is Cochran's Q with clustered variances. Strata with a group at 0 or at all successes
    /// are left out (listed as `zeroCell`). Throws `tooFewStrata` with fewer than two left.
    public func homogeneityTest(_ scale: ComparisonScale) throws(StatisticsError) -> HomogeneityTest {
        let layout = try included()
        let leftOut = homogeneityExclusions
        let usable = layout.filter { stratum in !leftOut.contains { $0.name == stratum.name } }
        guard usable.count >= 2 else {
            throw StatisticsError(.tooFewStrata, detail: "\(usable.count) strata without a zero cell")
        }
        let contrasts = usable.map { stratum in
            switch scale {
            case .difference:
                [(bucket: stratum.variantBucket, coefficient: 1.0), (bucket: stratum.controlBucket, coefficient: -1.0)]
            case .ratio:
                [(bucket: stratum.variantBucket, coefficient: 1 / stratum.variantRate),
                 (bucket: stratum.controlBucket, coefficient: -1 / stratum.controlRate)]
            }
        }
        let effects = usable.map { stratum in
            scale == .difference ? stratum.variantRate - stratum.controlRate : log(stratum.variantRate) - log(stratum.controlRate)
        }
        let rates = try rates()
        let covariance = contrasts.map { row in contrasts.map { column in rates.covariance(row, column) } }
        let statistic = try homogeneityStatistic(effects: effects, covariance: covariance)
        return HomogeneityTest(test: ChiSquareTest(statistic: statistic, degreesOfFreedom: Double(usable.count - 1)),
                               excluded: leftOut)
    }

    /// The included strata `homogeneityTest` leaves out, with a group at 0 or at all successes
    /// (`zeroCell`), in the strata's order; known even when too few strata are left for the test.
    public var homogeneityExclusions: [ExcludedStratum] {
        strata.filter { stratum in
            stratum.counts.exclusion == nil
                && [stratum.variant, stratum.control].contains { $0.successes == 0 || $0.successes == $0.trials }
        }.map { ExcludedStratum(name: $0.name, reason: .zeroCell) }
    }

    /// One stratum's own comparison (a row of a forest plot), with the devices it shares
    /// between its variant and control. Nil for an unknown name.
    public func comparison(in stratum: String) -> ClusteredProportionComparison? {
        guard let found = strata.first(where: { $0.name == stratum }) else { return nil }
        let shared = sharedDevices.first { entry in
            entry.first.stratum == stratum && entry.second.stratum == stratum && entry.first.arm != entry.second.arm
        }
        let moments = shared.map { $0.first.arm == .variant ? $0.moments : $0.moments.swapped }
        return ClusteredProportionComparison(variant: found.variant, control: found.control, sharedDevices: moments)
    }

    // MARK: Layout

    /// An included stratum's buckets: variant at `2 i`, control at `2 i + 1` of `rates()`.
    struct IncludedStratum {
        let index: Int
        let name: String
        let variantBucket: Int
        let controlBucket: Int
        let weight: Double
        let variantRate: Double
        let controlRate: Double
    }

    private func included() throws(StatisticsError) -> [IncludedStratum] {
        let layout = strata.enumerated().filter { $0.element.counts.exclusion == nil }.map { index, stratum in
            let n1 = Double(stratum.variant.trials)
            let n2 = Double(stratum.control.trials)
            return IncludedStratum(index: index, name: stratum.name, variantBucket: 2 * index, controlBucket: 2 * index + 1,
                                   weight: n1 * n2 / (n1 + n2), variantRate: stratum.variant.rate, controlRate: stratum.control.rate)
        }
        guard !layout.isEmpty else {
            throw StatisticsError(.tooFewStrata, detail: "no stratum has trials in both groups")
        }
        return layout
    }

    private func rates() throws(StatisticsError) -> DeviceClusteredRates {
        let position = Dictionary(uniqueKeysWithValues: strata.enumerated().map { ($0.element.name, $0.offset) })
        func bucket(_ reference: BucketReference) -> Int {
            2 * position[reference.stratum]! + (reference.arm == .variant ? 0 : 1)
        }
        return try DeviceClusteredRates(
            buckets: strata.flatMap { [$0.variant, $0.control] },
            sharedDevices: sharedDevices.map { (first: bucket($0.first), second: bucket($0.second), moments: $0.moments) }
        )
    }
}
