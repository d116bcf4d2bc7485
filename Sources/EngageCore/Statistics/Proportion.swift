import Foundation

/// A closed interval `[lower, upper]` around an estimate.
public struct ConfidenceInterval: Hashable, Sendable, CustomStringConvertible {
    public let lower: Double
    public let upper: Double

    public init(lower: Double, upper: Double) {
        self.lower = lower
        self.upper = upper
    }

    public var width: Double { upper - lower }

    public func contains(_ value: Double) -> Bool { lower <= value && value <= upper }

    public var description: String { "[\(lower), \(upper)]" }
}

/// A count of successes out of trials: opens per delivered notification, taps per open.
public struct Proportion: Hashable, Sendable {
    public let successes: Int
    public let trials: Int

    /// Throws `invalidCounts` for negative counts or more successes than trials (for example
    /// opens recorded without their delivery receipts); zero trials are allowed.
    public init(successes: Int, trials: Int) throws(StatisticsError) {
        guard successes >= 0, trials >= 0, successes <= trials else {
            throw StatisticsError(.invalidCounts, detail: "successes=\(successes) trials=\(trials)")
        }
        self.successes = successes
        self.trials = trials
    }

    /// Counts that hold `0 <= successes <= trials` by construction (sums of valid counts).
    init(validatedSuccesses successes: Int, trials: Int) {
        self.successes = successes
        self.trials = trials
    }

    /// The pooled counts of several proportions (sums of valid counts are valid). Held at the
    /// largest Int rather than trapping (`addingSaturated`): the parts may be stored counts, and
    /// holding both sums at the bound keeps `successes <= trials`.
    public init(summing parts: some Sequence<Proportion>) {
        var successes = 0
        var trials = 0
        for part in parts {
            successes.addSaturated(part.successes)
            trials.addSaturated(part.trials)
        }
        self.successes = successes
        self.trials = trials
    }

    public var failures: Int { trials - successes }

    /// `successes / trials`; 0 when there are no trials.
    public var rate: Double {
        trials == 0 ? 0 : Double(successes) / Double(trials)
    }

    /// Per-unit Bernoulli variance `p (1 - p)` (the population form, as gbstats uses).
    public var variance: Double { rate * (1 - rate) }

    /// As a metric summary for `Lift`.
    public var summary: MetricSummary {
        MetricSummary(mean: rate, variance: variance, count: trials)
    }

    /// Wilson's score interval: the set of `p` for which `|rate - p| <= z sqrt(p (1 - p) / n)`,
    /// i.e. `(x + z^2/2) / (n + z^2) +- z / (n + z^2) * sqrt(x (n - x) / n + z^2 / 4)`.
    ///
    /// It stays inside [0, 1] and behaves at 0/n and n/n, where the lower (upper) end is exactly
    /// 0 (1). With no trials it is the uninformative [0, 1].
    public func wilsonInterval(confidence: Double = 0.95) -> ConfidenceInterval {
        let z = twoSidedCriticalValue(confidence: confidence)
        guard trials > 0 else { return ConfidenceInterval(lower: 0, upper: 1) }
        let n = Double(trials)
        let x = Double(successes)
        let zSquared = z * z
        let denominator = n + zSquared
        let center = (x + zSquared / 2) / denominator
        let halfWidth = z / denominator * (x * (n - x) / n + zSquared / 4).squareRoot()
        let lower = successes == 0 ? 0 : max(0, center - halfWidth)
        let upper = successes == trials ? 1 : min(1, center + halfWidth)
        return ConfidenceInterval(lower: lower, upper: upper)
    }
}

/// The standard normal `z` with `P(|Z| <= z) == confidence`.
func twoSidedCriticalValue(confidence: Double) -> Double {
    precondition(confidence > 0 && confidence < 1, "confidence must be in (0, 1)")
    return Normal.quantile(1 - (1 - confidence) / 2)
}
