import Foundation

/// The side of a comparison a bucket holds.
public enum ComparisonArm: String, Hashable, Sendable {
    /// Rich notifications.
    case variant
    /// Plain notifications.
    case control
}

/// One bucket of a stratified comparison: a stratum's variant or control notifications.
public struct BucketReference: Hashable, Sendable {
    public let stratum: String
    public let arm: ComparisonArm

    public init(stratum: String, arm: ComparisonArm) {
        self.stratum = stratum
        self.arm = arm
    }
}

/// The cross moments of two buckets that share devices (see `DeviceCrossMoments`).
public struct SharedDeviceMoments: Hashable, Sendable {
    public let first: BucketReference
    public let second: BucketReference
    public let moments: DeviceCrossMoments

    public init(first: BucketReference, second: BucketReference, moments: DeviceCrossMoments) {
        self.first = first
        self.second = second
        self.moments = moments
    }
}

/// The rates of several buckets with the device as the unit, and the covariances that any
/// smooth function of them needs.
///
/// Each bucket's rate `p_b = sum_j x_jb / sum_j n_jb` is a ratio of sums over devices `j`;
/// linearised over devices, its error is `sum_j e_jb / n_b` with `e_jb = x_jb - p_b n_jb`.
/// Devices are independent of one another, a device's notifications are not, so
///
///     Cov(p_a, p_b) = sum_j e_ja e_jb / (n_a n_b)
///                   = (sum x_a x_b - p_b sum x_a n_b - p_a sum n_a x_b + p_a p_b sum n_a n_b) / (n_a n_b)
///
/// from the moments of each bucket (`a == b`) and the cross moments of buckets that share
/// devices (0 for buckets that share none). For an estimate whose linearisation is
/// `sum_b c_b p_b`, `Var = sum_a sum_b c_a c_b Cov(p_a, p_b)`: the cluster-robust (sandwich)
/// variance over devices, without small-sample factor, which is the binomial variance when
/// every device has one notification.
struct DeviceClusteredRates {
    private struct Pair: Hashable {
        let first: Int
        let second: Int
    }

    let buckets: [DeviceMoments]
    private let shared: [Pair: DeviceCrossMoments]

    /// `sharedDevices` use indices into `buckets`; a pair listed twice or a bucket with itself
    /// throws `invalidCounts`.
    init(buckets: [DeviceMoments], sharedDevices: [(first: Int, second: Int, moments: DeviceCrossMoments)]) throws(StatisticsError) {
        self.buckets = buckets
        var shared: [Pair: DeviceCrossMoments] = [:]
        for entry in sharedDevices {
            guard entry.first != entry.second else {
                throw StatisticsError(.invalidCounts, detail: "cross moments of a bucket with itself")
            }
            let pair = Pair(first: min(entry.first, entry.second), second: max(entry.first, entry.second))
            guard shared[pair] == nil else {
                throw StatisticsError(.invalidCounts, detail: "cross moments given twice for one pair of buckets")
            }
            shared[pair] = entry.first < entry.second ? entry.moments : entry.moments.swapped
        }
        self.shared = shared
    }

    func covariance(_ a: Int, _ b: Int) -> Double {
        if a == b { return buckets[a].clusteredRateVariance }
        let pair = Pair(first: min(a, b), second: max(a, b))
        guard let moments = shared[pair] else { return 0 }
        let first = buckets[pair.first]
        let second = buckets[pair.second]
        guard first.trials > 0, second.trials > 0 else { return 0 }
        let p = first.rate
        let q = second.rate
        let terms = [Double(moments.successesProduct), q * Double(moments.firstSuccessesSecondTrials),
                     p * Double(moments.firstTrialsSecondSuccesses), p * q * Double(moments.trialsProduct)]
        // Exactly 0 when every shared device has its buckets' rates, though the rates are not exact
        // in binary: the sums cancel to rounding, which a variance built on them would take for
        // certainty (as `DeviceMoments.residualSumOfSquares`).
        let residualProduct = DeviceCovariance.unlessCancelledEitherSign(terms[0] - terms[1] - terms[2] + terms[3], scale: terms.map(abs).reduce(0, +))
        return residualProduct / (Double(first.trials) * Double(second.trials))
    }

    /// `Cov(sum_a c_a p_a, sum_b d_b p_b)` for sparse coefficient lists.
    func covariance(_ first: [(bucket: Int, coefficient: Double)], _ second: [(bucket: Int, coefficient: Double)]) -> Double {
        var total = 0.0
        var scale = 0.0
        for a in first {
            for b in second {
                let term = a.coefficient * b.coefficient * covariance(a.bucket, b.bucket)
                total += term
                scale += abs(term)
            }
        }
        return DeviceCovariance.unlessCancelledEitherSign(total, scale: scale)
    }

    /// The binomial counterpart of `covariance(c, c)`: buckets independent, `p (1 - p) / n` each.
    func binomialVariance(_ coefficients: [(bucket: Int, coefficient: Double)]) -> Double {
        var sums: [Int: Double] = [:]
        for entry in coefficients { sums[entry.bucket, default: 0] += entry.coefficient }
        // In bucket order: a dictionary's order would change the last digit from one run to the next.
        return sums.keys.sorted().reduce(0) { total, bucket in total + sums[bucket]! * sums[bucket]! * buckets[bucket].binomialRateVariance }
    }
}
