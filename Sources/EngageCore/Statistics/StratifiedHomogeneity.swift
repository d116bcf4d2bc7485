import Foundation

extension StratifiedComparison {
    /// Breslow & Day's (1980) test that every stratum has the same odds ratio, as statsmodels'
    /// `StratifiedTable.test_equal_odds`: with the Mantel-Haenszel odds ratio
    /// `OR = sum x1 (n2 - x2) / N / sum (n1 - x1) x2 / N`, each stratum's expected `E` of `x1`
    /// under that common odds ratio (the root of `E (N - n1 - m1 + E) = OR (n1 - E) (m1 - E)`
    /// inside the table's bounds) and its variance
    /// `V = 1 / (1/E + 1/(m1 - E) + 1/(n1 - E) + 1/(N - n1 - m1 + E))`,
    ///
    ///     X^2 = sum (x1 - E)^2 / V      on K - 1 degrees of freedom,
    ///
    /// minus Tarone's (1985) correction `(sum x1 - sum E)^2 / sum V` when asked.
    ///
    /// Strata with only successes or only failures have no odds ratio: they are left out (and
    /// listed; statsmodels returns NaN there). Throws `tooFewStrata` with fewer than two strata
    /// left and `undefinedLogRatio` when the common odds ratio is 0 or infinite.
    ///
    /// It tests odds ratios, and it takes notifications as independent; for a risk difference
    /// or risk ratio headline `cochranQ` on the headline's own scale says more (docs/report.md).
    public func breslowDayTest(taroneAdjustment: Bool = false) throws(StatisticsError) -> HomogeneityTest {
        var concordant = 0.0
        var discordant = 0.0
        for table in try tables() {
            concordant += table.x1 * (table.n2 - table.x2) / table.total
            discordant += (table.n1 - table.x1) * table.x2 / table.total
        }
        guard concordant > 0, discordant > 0 else {
            throw StatisticsError(.undefinedLogRatio, detail: "Mantel-Haenszel odds ratio \(concordant)/\(discordant)")
        }
        let oddsRatio = concordant / discordant
        var statistic = 0.0
        var observed = 0.0
        var expected = 0.0
        var variances = 0.0
        var used = 0
        var degenerate: [ExcludedStratum] = []
        for stratum in included {
            let table = StratumTable(stratum)
            guard table.successes > 0, table.successes < table.total else {
                degenerate.append(ExcludedStratum(name: stratum.name, reason: .degenerateMargins))
                continue
            }
            let mean = Self.expectedVariantSuccesses(table, oddsRatio: oddsRatio)
            let variance = 1 / (1 / mean + 1 / (table.successes - mean) + 1 / (table.n1 - mean)
                + 1 / (table.n2 - table.successes + mean))
            statistic += (table.x1 - mean) * (table.x1 - mean) / variance
            observed += table.x1
            expected += mean
            variances += variance
            used += 1
        }
        guard used >= 2 else {
            throw StatisticsError(.tooFewStrata, detail: "\(used) strata with an odds ratio")
        }
        if taroneAdjustment {
            statistic -= (observed - expected) * (observed - expected) / variances
        }
        return HomogeneityTest(test: ChiSquareTest(statistic: statistic, degreesOfFreedom: Double(used - 1)),
                               excluded: degenerate)
    }

    /// The root of `(1 - OR) E^2 + (OR (n1 + m1) + N - n1 - m1) E - OR n1 m1 = 0` between
    /// `max(0, m1 - n2)` and `min(n1, m1)`, computed without cancellation.
    static func expectedVariantSuccesses(_ table: StratumTable, oddsRatio: Double) -> Double {
        let a = 1 - oddsRatio
        let b = oddsRatio * (table.n1 + table.successes) + table.n2 - table.successes
        let c = -oddsRatio * table.n1 * table.successes
        let lowest = max(0, table.successes - table.n2)
        let highest = min(table.n1, table.successes)
        let roots: [Double]
        if a == 0 {
            roots = [-c / b]
        } else {
            let q = -0.5 * (b + (b >= 0 ? 1 : -1) * max(0, b * b - 4 * a * c).squareRoot())
            roots = [q / a, c / q]
        }
        func distance(_ root: Double) -> Double { max(lowest - root, root - highest, 0) }
        let root = roots.min { distance($0) < distance($1) }!
        return min(max(root, lowest), highest)
    }

    /// Cochran's Q: do the strata's own effects, on `scale`, differ more than chance allows?
    ///
    /// Per stratum the effect `d` is `p1 - p2` (variance `p1 q1 / n1 + p2 q2 / n2`) or
    /// `log(p1 / p2)` (variance `q1 / (n1 p1) + q2 / (n2 p2)`); a stratum with a group at 0 or
    /// at all successes first gets 0.5 added to each of its four cells (as statsmodels'
    /// `effectsize_2proportions(..., zero_correction=0.5)`). With weights `1 / variance` and
    /// their weighted mean `d_w`,
    ///
    ///     Q = sum (d - d_w)^2 / variance    on K - 1 degrees of freedom
    ///
    /// (Cochran 1954; statsmodels `combine_effects(...).q`). Throws `tooFewStrata` with fewer
    /// than two included strata.
    public func cochranQ(_ scale: ComparisonScale) throws(StatisticsError) -> HomogeneityTest {
        let tables = try tables()
        guard tables.count >= 2 else {
            throw StatisticsError(.tooFewStrata, detail: "one stratum")
        }
        var effects: [Double] = []
        var variances: [Double] = []
        for table in tables {
            let corrected = table.withZeroCorrection
            let p1 = corrected.p1
            let p2 = corrected.p2
            switch scale {
            case .difference:
                effects.append(p1 - p2)
                variances.append(p1 * (1 - p1) / corrected.n1 + p2 * (1 - p2) / corrected.n2)
            case .ratio:
                effects.append(log(p1) - log(p2))
                variances.append((1 - p1) / (p1 * corrected.n1) + (1 - p2) / (p2 * corrected.n2))
            }
        }
        let weights = variances.map { 1 / $0 }
        let totalWeight = weights.reduce(0, +)
        let mean = zip(weights, effects).map(*).reduce(0, +) / totalWeight
        let statistic = zip(weights, effects).map { weight, effect in weight * (effect - mean) * (effect - mean) }.reduce(0, +)
        return HomogeneityTest(test: ChiSquareTest(statistic: statistic, degreesOfFreedom: Double(tables.count - 1)),
                               excluded: [])
    }
}

extension StratumTable {
    /// A group at 0 or at all successes: some cell of the 2x2 table is 0.
    var hasZeroCell: Bool { x1 == 0 || x1 == n1 || x2 == 0 || x2 == n2 }

    /// With 0.5 added to each cell when a cell is 0 (statsmodels' `zero_correction=0.5`).
    var withZeroCorrection: StratumTable {
        hasZeroCell ? StratumTable(x1: x1 + 0.5, n1: n1 + 1, x2: x2 + 0.5, n2: n2 + 1) : self
    }
}

/// The generalized Cochran's Q for correlated effects: the Wald statistic of "all equal",
///
///     Q = d' V^-1 d - (1' V^-1 d)^2 / (1' V^-1 1)
///
/// on `K - 1` degrees of freedom, with `V` the full covariance of the effects `d` (devices
/// shared between strata correlate them). With a diagonal `V` it is Cochran's Q. Throws
/// `zeroVariance` when `V` is not positive definite.
func homogeneityStatistic(effects: [Double], covariance: [[Double]]) throws(StatisticsError) -> Double {
    let factor = try choleskyFactor(covariance)
    let solvedEffects = choleskySolve(factor, effects)
    let solvedOnes = choleskySolve(factor, [Double](repeating: 1, count: effects.count))
    let quadratic = zip(effects, solvedEffects).map(*).reduce(0, +)
    let cross = solvedEffects.reduce(0, +)
    let precision = solvedOnes.reduce(0, +)
    return max(0, quadratic - cross * cross / precision)
}

/// The lower-triangular `L` with `L L' == matrix`.
private func choleskyFactor(_ matrix: [[Double]]) throws(StatisticsError) -> [[Double]] {
    let size = matrix.count
    var lower = [[Double]](repeating: [Double](repeating: 0, count: size), count: size)
    for row in 0..<size {
        for column in 0...row {
            var sum = matrix[row][column]
            for k in 0..<column { sum -= lower[row][k] * lower[column][k] }
            if row == column {
                // Relative to the diagonal, so that rounding cannot pass for a variance.
                guard sum > 1e-12 * matrix[row][row], sum.isFinite else {
                    throw StatisticsError(.zeroVariance, detail: "covariance of the strata's effects is singular")
                }
                lower[row][row] = sum.squareRoot()
            } else {
                lower[row][column] = sum / lower[column][column]
            }
        }
    }
    return lower
}

/// `x` with `L L' x == right`.
private func choleskySolve(_ lower: [[Double]], _ right: [Double]) -> [Double] {
    let size = right.count
    var forward = right
    for row in 0..<size {
        for k in 0..<row { forward[row] -= lower[row][k] * forward[k] }
        forward[row] /= lower[row][row]
    }
    var solution = forward
    for row in stride(from: size - 1, through: 0, by: -1) {
        for k in (row + 1)..<size { solution[row] -= lower[k][row] * solution[k] }
        solution[row] /= lower[row][row]
    }
    return solution
}
