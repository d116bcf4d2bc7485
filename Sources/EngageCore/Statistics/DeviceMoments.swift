import Foundation

/// What a device-clustered variance needs from one bucket (a category and presentation, say):
/// over the devices with trials in it, each with `x` successes out of `n` trials, the sums
/// `D`, `sum x`, `sum n`, `sum x^2`, `sum n^2` and `sum x n`.
///
/// The sums are integers, so keeping them up to date as a device's counts change
/// (`update(from:to:)`) is exact. Two buckets' moments add up only when no device is in both:
/// a device's squares do not add across buckets (merging days, say, needs the device's counts
/// over the merged period, not the days' moments).
public struct DeviceMoments: Hashable, Sendable {
    public private(set) var devices: Int = 0
    public private(set) var successes: Int = 0
    public private(set) var trials: Int = 0
    public private(set) var successesSquared: Int = 0
    public private(set) var trialsSquared: Int = 0
    public private(set) var successesTimesTrials: Int = 0

    public init() {}

    /// Stored moments, checked for what any set of devices satisfies (`0 <= sum x <= sum n`,
    /// `D <= sum n`, `sum x^2 <= sum x n <= sum n^2`, `D == 0` exactly when `sum n == 0`, and
    /// so on); throws `invalidCounts` otherwise.
    public init(devices: Int, successes: Int, trials: Int, successesSquared: Int, trialsSquared: Int,
                successesTimesTrials: Int) throws(StatisticsError) {
        guard devices >= 0, successes >= 0, successes <= trials, devices <= trials, (devices == 0) == (trials == 0),
              successesSquared >= successes, successesTimesTrials >= successesSquared,
              trialsSquared >= successesTimesTrials, trialsSquared >= trials
        else {
            throw StatisticsError(.invalidCounts, detail: "D=\(devices) x=\(successes) n=\(trials) xx=\(successesSquared) nn=\(trialsSquared) xn=\(successesTimesTrials)")
        }
        self.devices = devices
        self.successes = successes
        self.trials = trials
        self.successesSquared = successesSquared
        self.trialsSquared = trialsSquared
        self.successesTimesTrials = successesTimesTrials
    }

    /// The moments of devices given by their counts (devices without trials count for nothing).
    public init(deviceCounts counts: some Sequence<Proportion>) {
        for count in counts { add(count) }
    }

    /// Adds one device with `counts.successes` out of `counts.trials` in this bucket.
    public mutating func add(_ counts: Proportion) {
        update(from: Self.absent, to: counts)
    }

    /// A device's counts in this bucket went from `old` to `new` (an absent device has 0 of 0).
    public mutating func update(from old: Proportion, to new: Proportion) {
        devices += (new.trials > 0 ? 1 : 0) - (old.trials > 0 ? 1 : 0)
        successes += new.successes - old.successes
        trials += new.trials - old.trials
        successesSquared += new.successes * new.successes - old.successes * old.successes
        trialsSquared += new.trials * new.trials - old.trials * old.trials
        successesTimesTrials += new.successes * new.trials - old.successes * old.trials
    }

    /// Pooled successes out of trials, as if notifications were independent.
    public var proportion: Proportion { Proportion(validatedSuccesses: successes, trials: trials) }

    /// The rate `sum x / sum n`, 0 without trials.
    public var rate: Double { trials == 0 ? 0 : Double(successes) / Double(trials) }

    /// `sum (x - p n)^2` over devices, with `p` the bucket's rate: `sum x^2 - 2 p sum x n + p^2 sum n^2`.
    /// Exactly 0 when every device has the bucket's rate, though `p` (0.1, 0.2) is not exact in
    /// binary: what the difference cancels to is rounding, not variation between devices.
    var residualSumOfSquares: Double {
        let p = rate
        let terms = (Double(successesSquared), 2 * p * Double(successesTimesTrials), p * p * Double(trialsSquared))
        return max(0, DeviceCovariance.unlessCancelled(terms.0 - terms.1 + terms.2, scale: terms.0 + terms.1 + terms.2))
    }

    /// The variance of the rate with the device as the unit: the delta method for the ratio
    /// `sum x / sum n` over devices, `sum (x - p n)^2 / (sum n)^2` (a cluster-robust sandwich
    /// without small-sample factor; gbstats' sample-moment form is `D / (D - 1)` times it).
    /// With one notification per device it is the binomial `p (1 - p) / n`. 0 without trials.
    public var clusteredRateVariance: Double {
        trials == 0 ? 0 : residualSumOfSquares / (Double(trials) * Double(trials))
    }

    /// `p (1 - p) / n`, the variance when notifications are independent.
    public var binomialRateVariance: Double {
        trials == 0 ? 0 : rate * (1 - rate) / Double(trials)
    }

    /// The design effect of the rate: clustered variance over binomial variance (1 when
    /// devices behave as independent notifications; `1 + (m - 1) rho` for `m` notifications
    /// per device with intra-device correlation `rho`). Throws `zeroVariance` at a rate of 0 or 1.
    public func designEffect() throws(StatisticsError) -> Double {
        let binomial = binomialRateVariance
        guard binomial > 0 else {
            throw StatisticsError(.zeroVariance, detail: "rate \(rate)")
        }
        return clusteredRateVariance / binomial
    }

    /// The moments of two buckets with no device in common (one category of two apps). Stored
    /// moments are what it adds: each sum is held at the largest Int rather than trapping
    /// (`addingSaturated`), which keeps every inequality `init(devices:...)` checks.
    public static func + (a: DeviceMoments, b: DeviceMoments) -> DeviceMoments {
        var sum = a
        sum.devices.addSaturated(b.devices)
        sum.successes.addSaturated(b.successes)
        sum.trials.addSaturated(b.trials)
        sum.successesSquared.addSaturated(b.successesSquared)
        sum.trialsSquared.addSaturated(b.trialsSquared)
        sum.successesTimesTrials.addSaturated(b.successesTimesTrials)
        return sum
    }

    private static let absent = Proportion(summing: [])
}

/// What a device-clustered covariance needs from two buckets that share devices (rich and plain
/// notifications of one category on the same phone, or two categories): over the devices,
/// with `(x_a, n_a)` and `(x_b, n_b)` their counts in each (0 where absent), the sums
/// `sum x_a x_b`, `sum x_a n_b`, `sum n_a x_b` and `sum n_a n_b`.
public struct DeviceCrossMoments: Hashable, Sendable {
    public private(set) var successesProduct: Int = 0
    public private(set) var firstSuccessesSecondTrials: Int = 0
    public private(set) var firstTrialsSecondSuccesses: Int = 0
    public private(set) var trialsProduct: Int = 0

    public init() {}

    public init(successesProduct: Int, firstSuccessesSecondTrials: Int, firstTrialsSecondSuccesses: Int,
                trialsProduct: Int) throws(StatisticsError) {
        guard successesProduct >= 0, firstSuccessesSecondTrials >= successesProduct,
              firstTrialsSecondSuccesses >= successesProduct,
              trialsProduct >= firstSuccessesSecondTrials, trialsProduct >= firstTrialsSecondSuccesses
        else {
            throw StatisticsError(.invalidCounts, detail: "xx=\(successesProduct) xn=\(firstSuccessesSecondTrials) nx=\(firstTrialsSecondSuccesses) nn=\(trialsProduct)")
        }
        self.successesProduct = successesProduct
        self.firstSuccessesSecondTrials = firstSuccessesSecondTrials
        self.firstTrialsSecondSuccesses = firstTrialsSecondSuccesses
        self.trialsProduct = trialsProduct
    }

    /// Adds one device's counts in the first and the second bucket.
    public mutating func add(first: Proportion, second: Proportion) {
        successesProduct += first.successes * second.successes
        firstSuccessesSecondTrials += first.successes * second.trials
        firstTrialsSecondSuccesses += first.trials * second.successes
        trialsProduct += first.trials * second.trials
    }

    /// A device's counts went from `old` to `new` (in either bucket or both).
    public mutating func update(from old: (first: Proportion, second: Proportion), to new: (first: Proportion, second: Proportion)) {
        successesProduct += new.first.successes * new.second.successes - old.first.successes * old.second.successes
        firstSuccessesSecondTrials += new.first.successes * new.second.trials - old.first.successes * old.second.trials
        firstTrialsSecondSuccesses += new.first.trials * new.second.successes - old.first.trials * old.second.successes
        trialsProduct += new.first.trials * new.second.trials - old.first.trials * old.second.trials
    }

    /// The cross moments of two pairs of buckets with no device in common, held at the largest
    /// Int as `DeviceMoments.+` is.
    public static func + (a: DeviceCrossMoments, b: DeviceCrossMoments) -> DeviceCrossMoments {
        var sum = a
        sum.successesProduct.addSaturated(b.successesProduct)
        sum.firstSuccessesSecondTrials.addSaturated(b.firstSuccessesSecondTrials)
        sum.firstTrialsSecondSuccesses.addSaturated(b.firstTrialsSecondSuccesses)
        sum.trialsProduct.addSaturated(b.trialsProduct)
        return sum
    }

    /// The same sums with the buckets' roles swapped.
    var swapped: DeviceCrossMoments {
        var moments = DeviceCrossMoments()
        moments.successesProduct = successesProduct
        moments.firstSuccessesSecondTrials = firstTrialsSecondSuccesses
        moments.firstTrialsSecondSuccesses = firstSuccessesSecondTrials
        moments.trialsProduct = trialsProduct
        return moments
    }
}
