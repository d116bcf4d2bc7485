/// Sample ratio mismatch: did the arms receive the traffic split they were configured with?
/// A tiny p-value (GrowthBook warns below 0.001) means assignment or logging is broken and the
/// experiment's results should not be trusted.
public enum SampleRatioMismatch {
    /// Expected units per cell below which the chi-square approximation is not trusted
    /// (Cochran's rule of 5): 2 units both in a 10% arm give p = 2.2e-5 by the approximation,
    /// 0.01 exactly.
    public static let minimumExpectedUnits = 5.0

    /// The p-value a decision may act on, or nil when the units are too few to test. Arms that
    /// expect fewer than `minimumExpectedUnits` are pooled into one cell, and that cell, while
    /// it still expects fewer, into the other arm of smallest weight (the first of equals);
    /// `pValue` is then taken over the cells. With every arm expecting enough this is `pValue`
    /// itself. Waiting instead until EVERY arm expected 5 let one arm of small weight (0.2%:
    /// 2,500 units) silence the check of a split the others showed broken. When only one arm
    /// expects enough, the pooled cell is tested against it exactly (`BinomialTest`): pooled into
    /// it, one cell tested nothing, so 200 of 400 units in a 1% arm (p about 1e-282) passed.
    public static func decisionPValue(observed: [Int], weights: [Double]) -> Double? {
        precondition(observed.count == weights.count, "one weight per arm")
        let total = Double(observed.reduce(0, +))
        let totalWeight = weights.reduce(0, +)
        guard total > 0, totalWeight > 0 else { return nil }
        var cells: [(count: Int, weight: Double)] = []
        var pooled = (count: 0, weight: 0.0)
        for (count, weight) in zip(observed, weights) {
            // Units in an arm of weight 0 make the split impossible: `pValue` gives 0.
            if weight <= 0 {
                if count > 0 { return 0 }
                continue
            }
            if total * weight / totalWeight >= minimumExpectedUnits {
                cells.append((count, weight))
            } else {
                pooled = (pooled.count + count, pooled.weight + weight)
            }
        }
        if pooled.weight > 0 {
            if total * pooled.weight / totalWeight >= minimumExpectedUnits {
                cells.append(pooled)
            } else if cells.count == 1 {
                return BinomialTest.twoSidedPValue(successes: pooled.count, trials: pooled.count + cells[0].count,
                                                   probability: pooled.weight / (pooled.weight + cells[0].weight))
            } else if let smallest = cells.indices.min(by: { cells[$0].weight < cells[$1].weight }) {
                cells[smallest] = (cells[smallest].count + pooled.count, cells[smallest].weight + pooled.weight)
            }
        }
        guard cells.count >= 2 else { return nil }
        return pValue(observed: cells.map(\.count), weights: cells.map(\.weight))
    }

    /// Pearson's chi-square goodness-of-fit test of observed arm counts against expected
    /// weights (any positive scale; they are normalized):
    ///
    ///     X^2 = sum_i (o_i - e_i)^2 / e_i,  e_i = N w_i / sum w,  p = P(chi^2_{k-1} > X^2)
    ///
    /// with `k` the number of arms of positive weight. An arm of weight 0 is left out while it
    /// has no units (gbstats skips it likewise); one that has units makes the split impossible
    /// and gives 0. With no units at all, or fewer than two weighted arms, there is no evidence
    /// of a mismatch and the result is 1.
    public static func pValue(observed: [Int], weights: [Double]) -> Double {
        precondition(observed.count == weights.count, "one weight per arm")
        precondition(observed.allSatisfy { $0 >= 0 }, "counts must not be negative")
        precondition(weights.allSatisfy { $0 >= 0 && $0.isFinite }, "weights must be finite and not negative")
        let total = Double(observed.reduce(0, +))
        let totalWeight = weights.reduce(0, +)
        guard total > 0, totalWeight > 0 else { return 1 }
        var statistic = 0.0
        var arms = 0
        for (count, weight) in zip(observed, weights) {
            guard weight > 0 else {
                if count > 0 { return 0 }
                continue
            }
            let expected = total * weight / totalWeight
            let deviation = Double(count) - expected
            statistic += deviation * deviation / expected
            arms += 1
        }
        guard arms >= 2 else { return 1 }
        return ChiSquare.survival(statistic, degreesOfFreedom: Double(arms - 1))
    }
}
