import Foundation

/// Sums over the devices of one arm for a ratio metric `x / n` (for example opened / displayed):
/// every device contributes its own `x` and `n`, so the device, not the notification, is the
/// unit of the variance. These six numbers are all that the delta method needs, and they add up
/// across arms, days or shards.
public struct RatioMoments: Hashable, Sendable {
    /// `D`, the devices counted (a device with `n = 0` still counts).
    public var devices: Int
    /// `sum x`.
    public var numeratorSum: Double
    /// `sum x^2`.
    public var numeratorSquares: Double
    /// `sum n`.
    public var denominatorSum: Double
    /// `sum n^2`.
    public var denominatorSquares: Double
    /// `sum x n`.
    public var crossProducts: Double

    public init(devices: Int = 0, numeratorSum: Double = 0, numeratorSquares: Double = 0, denominatorSum: Double = 0,
                denominatorSquares: Double = 0, crossProducts: Double = 0) {
        self.devices = devices
        self.numeratorSum = numeratorSum
        self.numeratorSquares = numeratorSquares
        self.denominatorSum = denominatorSum
        self.denominatorSquares = denominatorSquares
        self.crossProducts = crossProducts
    }

    /// Counts one more device.
    public mutating func add(numerator x: Double, denominator n: Double) {
        devices += 1
        numeratorSum += x
        numeratorSquares += x * x
        denominatorSum += n
        denominatorSquares += n * n
        crossProducts += x * n
    }

    /// The devices of both, as one sample.
    public static func + (lhs: RatioMoments, rhs: RatioMoments) -> RatioMoments {
        RatioMoments(devices: lhs.devices + rhs.devices, numeratorSum: lhs.numeratorSum + rhs.numeratorSum,
                     numeratorSquares: lhs.numeratorSquares + rhs.numeratorSquares,
                     denominatorSum: lhs.denominatorSum + rhs.denominatorSum,
                     denominatorSquares: lhs.denominatorSquares + rhs.denominatorSquares,
                     crossProducts: lhs.crossProducts + rhs.crossProducts)
    }

    /// `sum x / sum n`; 0 without any `n`, as gbstats' `RatioStatistic.mean`.
    public var ratio: Double { denominatorSum == 0 ? 0 : numeratorSum / denominatorSum }
}

/// A ratio metric in one arm together with each device's value of the same metric in a window
/// before the experiment (`x'`, `n'`), the covariate of CUPED. A device without history stays in
/// the arm with `x' = n' = 0`. A per-device covariate that is a plain number `c` (for example a
/// device's pre-period rate) is the case `n' = 1` for every device: see
/// `add(numerator:denominator:covariate:)`.
///
/// Besides the sums of each, the cross products of the post and pre values are kept, because the
/// adjustment works through their covariance.
public struct AdjustedRatioMoments: Hashable, Sendable {
    /// `x`, `n` during the experiment.
    public var post: RatioMoments
    /// `x'`, `n'` in the pre-experiment window, over the same devices (`pre.devices == post.devices`).
    public var pre: RatioMoments
    /// `sum x x'`.
    public var numeratorTimesPreNumerator: Double
    /// `sum x n'`.
    public var numeratorTimesPreDenominator: Double
    /// `sum n x'`.
    public var denominatorTimesPreNumerator: Double
    /// `sum n n'`.
    public var denominatorTimesPreDenominator: Double

    public init(post: RatioMoments = RatioMoments(), pre: RatioMoments = RatioMoments(),
                numeratorTimesPreNumerator: Double = 0, numeratorTimesPreDenominator: Double = 0,
                denominatorTimesPreNumerator: Double = 0, denominatorTimesPreDenominator: Double = 0) {
        precondition(post.devices == pre.devices, "the pre-period sums must cover the same devices")
        self.post = post
        self.pre = pre
        self.numeratorTimesPreNumerator = numeratorTimesPreNumerator
        self.numeratorTimesPreDenominator = numeratorTimesPreDenominator
        self.denominatorTimesPreNumerator = denominatorTimesPreNumerator
        self.denominatorTimesPreDenominator = denominatorTimesPreDenominator
    }

    /// Counts one more device, with its pre-period numerator and denominator (0 and 0 without history).
    public mutating func add(numerator x: Double, denominator n: Double, preNumerator xPre: Double,
                             preDenominator nPre: Double) {
        post.add(numerator: x, denominator: n)
        pre.add(numerator: xPre, denominator: nPre)
        numeratorTimesPreNumerator += x * xPre
        numeratorTimesPreDenominator += x * nPre
        denominatorTimesPreNumerator += n * xPre
        denominatorTimesPreDenominator += n * nPre
    }

    /// Counts one more device whose covariate is a single number (`n' = 1`).
    public mutating func add(numerator x: Double, denominator n: Double, covariate c: Double) {
        add(numerator: x, denominator: n, preNumerator: c, preDenominator: 1)
    }

    /// gbstats' `mean_ra` input: a per-device value `y` (denominator 1) with a per-device
    /// covariate `c`, from the sums D, sum y, sum y^2, sum c, sum c^2, sum y c.
    public static func meanMetric(devices: Int, sum: Double, sumOfSquares: Double, covariateSum: Double,
                                  covariateSquares: Double, crossProducts: Double) -> AdjustedRatioMoments {
        let units = Double(devices)
        return AdjustedRatioMoments(
            post: RatioMoments(devices: devices, numeratorSum: sum, numeratorSquares: sumOfSquares,
                               denominatorSum: units, denominatorSquares: units, crossProducts: sum),
            pre: RatioMoments(devices: devices, numeratorSum: covariateSum, numeratorSquares: covariateSquares,
                              denominatorSum: units, denominatorSquares: units, crossProducts: covariateSum),
            numeratorTimesPreNumerator: crossProducts, numeratorTimesPreDenominator: sum,
            denominatorTimesPreNumerator: covariateSum, denominatorTimesPreDenominator: units)
    }

    /// The devices of both, as one sample.
    public static func + (lhs: AdjustedRatioMoments, rhs: AdjustedRatioMoments) -> AdjustedRatioMoments {
        AdjustedRatioMoments(
            post: lhs.post + rhs.post, pre: lhs.pre + rhs.pre,
            numeratorTimesPreNumerator: lhs.numeratorTimesPreNumerator + rhs.numeratorTimesPreNumerator,
            numeratorTimesPreDenominator: lhs.numeratorTimesPreDenominator + rhs.numeratorTimesPreDenominator,
            denominatorTimesPreNumerator: lhs.denominatorTimesPreNumerator + rhs.denominatorTimesPreNumerator,
            denominatorTimesPreDenominator: lhs.denominatorTimesPreDenominator + rhs.denominatorTimesPreDenominator)
    }
}
