import Foundation

/// One arm's estimate of a metric, as the two-arm tests read it: a mean, the per-device variance
/// of that mean (`Var(mean) = variance / devices`) and the device count.
public struct ArmEstimate: Hashable, Sendable {
    public let devices: Int
    /// The mean the effect is computed from; regression-adjusted under CUPED.
    public let mean: Double
    /// The mean without adjustment, which relative effects divide by (as gbstats does).
    public let unadjustedMean: Double
    /// The adjusted mean put back at the metric's level, `R - theta (R' - R'_pooled)`, which the
    /// log ratio takes the logarithm of (gbstats' `R - theta R'` is shifted by `theta R'_pooled`;
    /// differences do not see the shift, logarithms do). `mean` without adjustment.
    public let centredMean: Double
    /// Per-device variance; 0 when it cannot be estimated (fewer than two devices, no
    /// denominator, or every device alike).
    public let variance: Double

    public init(devices: Int, mean: Double, unadjustedMean: Double, variance: Double, centredMean: Double? = nil) {
        self.devices = devices
        self.mean = mean
        self.unadjustedMean = unadjustedMean
        self.variance = variance
        self.centredMean = centredMean ?? mean
    }

    /// A group's summary, unadjusted, with its units as devices.
    public init(_ summary: MetricSummary) {
        self.init(devices: summary.count, mean: summary.mean, unadjustedMean: summary.mean, variance: summary.variance)
    }

    /// A device-clustered ratio metric `sum x / sum n` with its delta-method variance over
    /// devices, from sample moments (divisor `D - 1`), as gbstats' `RatioStatistic`:
    ///
    ///     Var = s_x^2 / nbar^2 - 2 s_xn xbar / nbar^3 + xbar^2 s_n^2 / nbar^4
    ///
    /// where `xbar`, `nbar` are per-device means and `s` sample (co)variances.
    public init(_ moments: RatioMoments) {
        devices = moments.devices
        mean = moments.ratio
        unadjustedMean = mean
        centredMean = mean
        let covariance = DeviceCovariance(moments)
        let xbar = covariance.means[0]
        let nbar = covariance.means[1]
        guard moments.devices > 1, nbar != 0 else {
            variance = 0
            return
        }
        let s = covariance.matrix
        let terms = [s[0][0] / pow(nbar, 2), 2 * s[0][1] * xbar / pow(nbar, 3), pow(xbar, 2) * s[1][1] / pow(nbar, 4)]
        variance = DeviceCovariance.unlessCancelled(terms[0] - terms[1] + terms[2], scale: terms.map(abs).reduce(0, +))
    }
}

/// Sample means and covariances (divisor `D - 1`) of the per-device values `x, n, x', n'`.
struct DeviceCovariance {
    /// `xbar, nbar, x'bar, n'bar`.
    let means: [Double]
    /// Symmetric, in the order of `means`.
    let matrix: [[Double]]

    /// Relative size below which a variance that should be >= 0 is rounding noise: a difference
    /// of sums that cancels to this fraction of its terms is taken as exactly 0 (a constant metric),
    /// where gbstats would go on with a variance of 1e-17 and report a meaningless certainty.
    static let cancellation = 1e-12

    static func unlessCancelled(_ value: Double, scale: Double) -> Double {
        value <= cancellation * scale ? 0 : value
    }

    /// The same for a covariance, which may be negative: a value of either sign that small is 0.
    static func unlessCancelledEitherSign(_ value: Double, scale: Double) -> Double {
        abs(value) <= cancellation * scale ? 0 : value
    }

    init(_ moments: RatioMoments) {
        self.init(AdjustedRatioMoments(post: moments, pre: RatioMoments(devices: moments.devices)))
    }

    init(_ moments: AdjustedRatioMoments) {
        let count = Double(moments.post.devices)
        let sums = [moments.post.numeratorSum, moments.post.denominatorSum, moments.pre.numeratorSum,
                    moments.pre.denominatorSum]
        let post = moments.post
        let pre = moments.pre
        let products: [[Double]] = [
            [post.numeratorSquares, post.crossProducts, moments.numeratorTimesPreNumerator,
             moments.numeratorTimesPreDenominator],
            [post.crossProducts, post.denominatorSquares, moments.denominatorTimesPreNumerator,
             moments.denominatorTimesPreDenominator],
            [moments.numeratorTimesPreNumerator, moments.denominatorTimesPreNumerator, pre.numeratorSquares,
             pre.crossProducts],
            [moments.numeratorTimesPreDenominator, moments.denominatorTimesPreDenominator, pre.crossProducts,
             pre.denominatorSquares],
        ]
        means = sums.map { count == 0 ? 0 : $0 / count }
        guard count > 1 else {
            matrix = Array(repeating: Array(repeating: 0, count: 4), count: 4)
            return
        }
        matrix = (0..<4).map { i in
            (0..<4).map { j in
                let centred = products[i][j] - sums[i] * sums[j] / count
                return (i == j ? Self.unlessCancelled(centred, scale: products[i][i]) : centred) / (count - 1)
            }
        }
    }

    /// `a' S b`: the covariance of two linear combinations of the per-device values.
    func bilinear(_ a: [Double], _ b: [Double]) -> Double {
        var total = 0.0
        for i in 0..<4 where a[i] != 0 {
            for j in 0..<4 where b[j] != 0 {
                total += a[i] * matrix[i][j] * b[j]
            }
        }
        return total
    }

    /// `g' S g`, the variance of a linear combination, 0 when it cancels to rounding noise.
    func variance(_ g: [Double]) -> Double {
        var scale = 0.0
        for i in 0..<4 where g[i] != 0 {
            for j in 0..<4 where g[j] != 0 {
                scale += abs(g[i] * matrix[i][j] * g[j])
            }
        }
        return Self.unlessCancelled(bilinear(g, g), scale: scale)
    }
}
