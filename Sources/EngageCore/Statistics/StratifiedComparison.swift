import Foundation

/// A variant against a control across strata (categories), each stratum a 2x2 table of
/// successes and trials, with the summaries that remove confounding by stratum.
///
/// Notation per included stratum `k`: variant `x1 / n1`, control `x2 / n2`, `N = n1 + n2`,
/// `m1 = x1 + x2` successes. A stratum without variant or without control trials carries no
/// comparison: it is excluded (and listed in `excluded`); with none left, every summary throws
/// `tooFewStrata` (the "not enough data" state).
public struct StratifiedComparison: Hashable, Sendable {
    public let strata: [Stratum]
    /// Strata with trials in both groups, in the given order.
    public let included: [Stratum]
    public let excluded: [ExcludedStratum]

    public init(strata: [Stratum]) {
        self.strata = strata
        included = strata.filter { $0.exclusion == nil }
        excluded = strata.compactMap { stratum in
            stratum.exclusion.map { ExcludedStratum(name: stratum.name, reason: $0) }
        }
    }

    /// The crude comparison: every stratum's counts pooled, as if strata did not exist. It
    /// compares different mixes of strata when the groups' mixes differ (Simpson's paradox).
    public var crude: ProportionComparison {
        ProportionComparison(variant: Proportion(summing: strata.map(\.variant)),
                             control: Proportion(summing: strata.map(\.control)))
    }

    /// Mantel & Haenszel's risk difference with Sato's and Greenland & Robins' variances.
    public func mantelHaenszelRiskDifference() throws(StatisticsError) -> MantelHaenszelRiskDifference {
        try MantelHaenszelRiskDifference(try tables())
    }

    /// Mantel & Haenszel's risk ratio with the variances of its log.
    public func mantelHaenszelRiskRatio() throws(StatisticsError) -> MantelHaenszelRiskRatio {
        try MantelHaenszelRiskRatio(try tables())
    }

    /// The Cochran-Mantel-Haenszel test of "no association in any stratum" (Mantel & Haenszel
    /// 1959), as statsmodels' `StratifiedTable.test_null_odds`:
    ///
    ///     U = sum (x1 - n1 m1 / N),   V = sum n1 n2 m1 (N - m1) / (N^2 (N - 1)),   X^2 = U^2 / V
    ///
    /// on 1 degree of freedom. With the continuity correction `X^2 = (|U| - 1/2)^2 / V` when
    /// `|U| >= 1/2`, and `U^2 / V` otherwise (as R's `mantelhaen.test`; statsmodels squares
    /// `|U| - 1/2` even when it is negative, which moves the statistic away from the null).
    /// Throws `zeroVariance` when every stratum has only successes or only failures.
    public func cochranMantelHaenszelTest(continuityCorrection: Bool = false) throws(StatisticsError) -> ChiSquareTest {
        var deviation = 0.0
        var variance = 0.0
        for table in try tables() {
            let failures = table.total - table.successes
            deviation += table.x1 - table.n1 * table.successes / table.total
            variance += table.n1 * table.n2 * table.successes * failures / (table.total * table.total * (table.total - 1))
        }
        guard variance > 0 else {
            throw StatisticsError(.zeroVariance, detail: "CMH variance 0")
        }
        let corrected = continuityCorrection && abs(deviation) >= 0.5 ? abs(deviation) - 0.5 : abs(deviation)
        return ChiSquareTest(statistic: corrected * corrected / variance, degreesOfFreedom: 1)
    }

    /// The included strata as numbers.
    func tables() throws(StatisticsError) -> [StratumTable] {
        guard !included.isEmpty else {
            throw StatisticsError(.tooFewStrata, detail: "no stratum has trials in both groups")
        }
        return included.map(StratumTable.init)
    }
}

/// One included stratum's counts as doubles.
struct StratumTable {
    let x1: Double, n1: Double, x2: Double, n2: Double

    init(x1: Double, n1: Double, x2: Double, n2: Double) {
        self.x1 = x1
        self.n1 = n1
        self.x2 = x2
        self.n2 = n2
    }

    init(_ stratum: Stratum) {
        self.init(x1: Double(stratum.variant.successes), n1: Double(stratum.variant.trials),
                  x2: Double(stratum.control.successes), n2: Double(stratum.control.trials))
    }

    var total: Double { n1 + n2 }
    var successes: Double { x1 + x2 }
    var p1: Double { x1 / n1 }
    var p2: Double { x2 / n2 }
    /// The Mantel-Haenszel weight `n1 n2 / N`.
    var weight: Double { n1 * n2 / total }
}

/// Mantel & Haenszel's risk difference
///
///     RD = sum w (p1 - p2) / sum w,    w = n1 n2 / N
///
/// (Greenland & Robins 1985), a weighted average of the strata's differences.
public struct MantelHaenszelRiskDifference: Hashable, Sendable {
    public let estimate: Double
    /// Sato (1989), consistent both for a few large strata and for many sparse ones:
    ///
    ///     Var = (RD sum P + sum Q) / (sum w)^2
    ///     P = (n1^2 x2 - n2^2 x1 + n1 n2 (n2 - n1) / 2) / N^2
    ///     Q = (x1 (n2 - x2) + x2 (n1 - x1)) / (2 N)
    public let satoVariance: Double
    /// Greenland & Robins (1985), for large strata:
    /// `sum w^2 (p1 (1 - p1) / n1 + p2 (1 - p2) / n2) / (sum w)^2`. The device-clustered
    /// variance reduces to it when every device has one notification.
    public let greenlandRobinsVariance: Double

    init(_ tables: [StratumTable]) throws(StatisticsError) {
        var weights = 0.0
        var weightedDifference = 0.0
        var satoP = 0.0
        var satoQ = 0.0
        var largeStrata = 0.0
        for table in tables {
            let (x1, n1, x2, n2, total) = (table.x1, table.n1, table.x2, table.n2, table.total)
            let weight = table.weight
            weights += weight
            weightedDifference += (x1 * n2 - x2 * n1) / total
            let satoPTerm: Double = n1 * n1 * x2 - n2 * n2 * x1 + n1 * n2 * (n2 - n1) / 2
            satoP += satoPTerm / (total * total)
            satoQ += (x1 * (n2 - x2) + x2 * (n1 - x1)) / (2 * total)
            let binomial: Double = table.p1 * (1 - table.p1) / n1 + table.p2 * (1 - table.p2) / n2
            largeStrata += weight * weight * binomial
        }
        estimate = weightedDifference / weights
        satoVariance = (estimate * satoP + satoQ) / (weights * weights)
        greenlandRobinsVariance = largeStrata / (weights * weights)
    }

    /// `RD +- z sqrt(Var_Sato)` and the p-value of the same Wald statistic. Throws
    /// `zeroVariance` when the variance is not positive (every rate 0, say).
    public func satoEstimate(confidence: Double = 0.95) throws(StatisticsError) -> EffectEstimate {
        try EffectEstimate.wald(difference: estimate, variance: satoVariance,
                                method: .mantelHaenszelSato, confidence: confidence)
    }

    /// `RD +- z sqrt(Var_GR)` and the p-value of the same Wald statistic.
    public func greenlandRobinsEstimate(confidence: Double = 0.95) throws(StatisticsError) -> EffectEstimate {
        try EffectEstimate.wald(difference: estimate, variance: greenlandRobinsVariance,
                                method: .mantelHaenszelGreenlandRobins, confidence: confidence)
    }
}

/// Mantel & Haenszel's risk ratio
///
///     RR = R / S,    R = sum x1 n2 / N = sum w p1,    S = sum x2 n1 / N = sum w p2
///
/// (as statsmodels' `StratifiedTable.riskratio_pooled`). Throws `zeroBaseline` when `S` is 0
/// (no control successes in any included stratum).
public struct MantelHaenszelRiskRatio: Hashable, Sendable {
    public let estimate: Double
    /// Greenland & Robins (1985), consistent for large and for sparse strata:
    ///
    ///     Var log RR = sum (n1 n2 m1 - x1 x2 N) / N^2 / (R S)
    public let greenlandRobinsLogVariance: Double
    /// The delta method for large strata: `sum w^2 (p1 (1 - p1) / (n1 R^2) + p2 (1 - p2) / (n2 S^2))`.
    /// The device-clustered variance reduces to it when every device has one notification;
    /// with one stratum it is Katz's `1/x1 - 1/n1 + 1/x2 - 1/n2`.
    public let largeStrataLogVariance: Double

    init(_ tables: [StratumTable]) throws(StatisticsError) {
        var variantSum = 0.0
        var controlSum = 0.0
        var greenlandRobins = 0.0
        for table in tables {
            variantSum += table.x1 * table.n2 / table.total
            controlSum += table.x2 * table.n1 / table.total
            greenlandRobins += (table.n1 * table.n2 * table.successes - table.x1 * table.x2 * table.total)
                / (table.total * table.total)
        }
        guard controlSum > 0 else {
            throw StatisticsError(.zeroBaseline, detail: "no control successes")
        }
        // Without variant successes the log ratio is -infinity and so is its variance's scale.
        var largeStrata = variantSum > 0 ? 0.0 : .infinity
        for table in tables where variantSum > 0 {
            let weight = table.weight
            largeStrata += weight * weight * (table.p1 * (1 - table.p1) / (table.n1 * variantSum * variantSum)
                + table.p2 * (1 - table.p2) / (table.n2 * controlSum * controlSum))
        }
        estimate = variantSum / controlSum
        greenlandRobinsLogVariance = greenlandRobins / (variantSum * controlSum)
        largeStrataLogVariance = largeStrata
    }

    /// `exp(log RR +- z sqrt(Var_GR))` and the p-value of the same Wald statistic on the log
    /// scale. Throws `undefinedLogRatio` when RR is 0 (no variant successes).
    public func greenlandRobinsEstimate(confidence: Double = 0.95) throws(StatisticsError) -> EffectEstimate {
        try EffectEstimate.waldOnLog(ratio: estimate, logVariance: greenlandRobinsLogVariance,
                                     method: .mantelHaenszelGreenlandRobins, confidence: confidence)
    }

    /// The same with the large-strata variance.
    public func largeStrataEstimate(confidence: Double = 0.95) throws(StatisticsError) -> EffectEstimate {
        try EffectEstimate.waldOnLog(ratio: estimate, logVariance: largeStrataLogVariance,
                                     method: .mantelHaenszelLargeStrata, confidence: confidence)
    }
}
