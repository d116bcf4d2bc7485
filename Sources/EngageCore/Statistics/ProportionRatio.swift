import Foundation

/// How the interval of a ratio of two proportions is built. Each gives a ratio interval that
/// stays above 0, so the relative lift never goes below -100%, and a p-value from the same test.
public enum RatioIntervalMethod: String, Hashable, Sendable, CaseIterable {
    /// Katz (1978): Wald on `log(p1 / p2)`; needs successes in both groups.
    case katzLog = "katz_log"
    /// Miettinen & Nurminen (1985): the score interval with the `N / (N - 1)` correction;
    /// handles a variant without successes (lower limit 0). The recommended default.
    case miettinenNurminenScore = "miettinen_nurminen_score"
    /// Koopman (1984): the same score interval without the correction.
    case koopmanScore = "koopman_score"
}

extension ProportionComparison {
    /// `p1 / p2`. Throws `tooFewUnits` when a group has no trials and `zeroBaseline` when the
    /// control has no successes.
    public func ratio() throws(StatisticsError) -> Double {
        try requireRatio()
        return variant.rate / control.rate
    }

    /// The ratio `p1 / p2` with an interval and a p-value of `p1 == p2` by one method, as
    /// statsmodels' `confint_proportions_2indep(compare="ratio", method=...)` and
    /// `test_proportions_2indep(compare="ratio", method=...)`:
    ///
    ///  - Katz log: `exp(log r +- z sqrt(1/x1 - 1/n1 + 1/x2 - 1/n2))`, `p` from the same `z`;
    ///    throws `undefinedLogRatio` when the variant has no successes;
    ///  - score: the ratios `R` whose score statistic `|z(R)|` stays within the critical
    ///    value (see `RatioScoreStatistic`), `p` from `z(1)`.
    ///
    /// Throws `tooFewUnits` when a group has no trials, `zeroBaseline` when the control has no
    /// successes, `zeroVariance` when the log variance is 0 (every trial a success on both sides).
    public func ratioEstimate(_ method: RatioIntervalMethod = .miettinenNurminenScore,
                              confidence: Double = 0.95) throws(StatisticsError) -> EffectEstimate {
        try requireRatio()
        switch method {
        case .katzLog:
            guard variant.successes > 0 else {
                throw StatisticsError(.undefinedLogRatio, detail: "x1=0")
            }
            let logVariance = 1 / Double(variant.successes) - 1 / Double(variant.trials)
                + 1 / Double(control.successes) - 1 / Double(control.trials)
            return try EffectEstimate.waldOnLog(ratio: variant.rate / control.rate, logVariance: logVariance,
                                                method: .katzLog, confidence: confidence)
        case .miettinenNurminenScore:
            return RatioScoreStatistic(self, correction: true).estimate(method: .miettinenNurminenScore, confidence: confidence)
        case .koopmanScore:
            return RatioScoreStatistic(self, correction: false).estimate(method: .koopmanScore, confidence: confidence)
        }
    }

    /// `p1 - p2` with the Wald interval and test of the binomial variance
    /// `p1 (1 - p1) / n1 + p2 (1 - p2) / n2`: what the device-clustered difference reduces to
    /// when every device has one notification. Throws `tooFewUnits` without trials and
    /// `zeroVariance` when both rates are 0 or 1.
    public func binomialWaldDifference(confidence: Double = 0.95) throws(StatisticsError) -> EffectEstimate {
        guard variant.trials > 0, control.trials > 0 else {
            throw StatisticsError(.tooFewUnits, detail: "n1=\(variant.trials) n2=\(control.trials)")
        }
        let variance = variant.variance / Double(variant.trials) + control.variance / Double(control.trials)
        return try EffectEstimate.wald(difference: absoluteDifference, variance: variance,
                                       method: .binomialWald, confidence: confidence)
    }

    private func requireRatio() throws(StatisticsError) {
        guard variant.trials > 0, control.trials > 0 else {
            throw StatisticsError(.tooFewUnits, detail: "n1=\(variant.trials) n2=\(control.trials)")
        }
        guard control.successes > 0 else {
            throw StatisticsError(.zeroBaseline, detail: "x2=0")
        }
    }
}
