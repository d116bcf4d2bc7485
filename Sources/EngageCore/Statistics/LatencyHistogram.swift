import Foundation

/// A mergeable histogram of latencies in milliseconds with a guaranteed relative error.
///
/// Buckets grow geometrically (the log mapping of DDSketch): with `g = (1 + e) / (1 - e)` for
/// the layout's relative error `e`, log bucket `i` holds `[min g^i, min g^(i+1))` and reports the
/// point `2 min g^(i+1) / (1 + g)`, which is within a factor `1 +- e` of every value in the
/// bucket. The layout is fixed, so two histograms merge by adding counts index by index; that
/// is how rows stored as PostgreSQL `bigint[]` are combined, in Swift (`merge`) or in SQL.
///
/// `counts` has `layout.countsLength` entries:
///
///  - index 0: underflow, values below `minimum` (and NaN);
///  - indices 1...bucketCount: the log buckets in increasing order;
///  - the last index: overflow, values above `maximum`.
///
/// Error bound: for `q` in [0, 1], let `x` be the recorded value of 0-based rank
/// `floor(q (n - 1))` in sorted order. If `x` lies in [minimum, maximum], `quantile(q)` is
/// within `relativeError * x` of `x`. Values in the underflow (overflow) bucket report
/// `minimum` (`maximum`), a bound rather than an estimate.
public struct LatencyHistogram: Hashable, Sendable {
    /// Bucket boundaries; histograms merge only with the same layout.
    public struct Layout: Hashable, Sendable {
        /// Smallest value with relative precision, in milliseconds.
        public let minimum: Double
        /// Largest value with relative precision, in milliseconds.
        public let maximum: Double
        /// Bound on the relative error of a reported value.
        public let relativeError: Double
        /// Number of log buckets, without underflow and overflow.
        public let bucketCount: Int
        /// Ratio of consecutive bucket boundaries, `(1 + e) / (1 - e)`.
        public let growth: Double
        private let logGrowth: Double

        public init(minimum: Double, maximum: Double, relativeError: Double) {
            precondition(minimum > 0 && minimum.isFinite, "minimum must be positive")
            precondition(maximum > minimum && maximum.isFinite, "maximum must exceed minimum")
            precondition(relativeError > 0 && relativeError < 1, "relative error must be in (0, 1)")
            self.minimum = minimum
            self.maximum = maximum
            self.relativeError = relativeError
            growth = (1 + relativeError) / (1 - relativeError)
            logGrowth = log(growth)
            let buckets = (log(maximum / minimum) / logGrowth).rounded(.up)
            precondition(buckets <= 1_000_000, "too many buckets")
            bucketCount = max(1, Int(buckets))
        }

        /// 1 ms to 60 s within 1 %: 551 log buckets, 553 counts.
        public static let standard = Layout(minimum: 1, maximum: 60_000, relativeError: 0.01)

        /// Length of a counts array in this layout.
        public var countsLength: Int { bucketCount + 2 }

        /// Index into `counts` of the bucket that holds `value`.
        public func index(of value: Double) -> Int {
            guard value >= minimum else { return 0 } // also NaN
            guard value <= maximum else { return bucketCount + 1 }
            let bucket = Int((log(value / minimum) / logGrowth).rounded(.down))
            return min(max(bucket, 0), bucketCount - 1) + 1
        }

        /// The value reported for `counts[index]`.
        public func representative(ofIndex index: Int) -> Double {
            precondition((0..<countsLength).contains(index), "index out of range")
            if index == 0 { return minimum }
            if index == bucketCount + 1 { return maximum }
            let upperBound = minimum * pow(growth, Double(index))
            return 2 * upperBound / (1 + growth)
        }
    }

    public let layout: Layout
    /// Counts per bucket, ready to store as `bigint[]`.
    public private(set) var counts: [Int64]
    /// Number of recorded values.
    public private(set) var totalCount: Int64

    /// An empty histogram.
    public init(layout: Layout = .standard) {
        self.layout = layout
        counts = Array(repeating: 0, count: layout.countsLength)
        totalCount = 0
    }

    /// A histogram restored from stored counts; throws `invalidHistogram` when the array's
    /// length does not match the layout or a count is negative.
    public init(counts: [Int64], layout: Layout = .standard) throws(StatisticsError) {
        guard counts.count == layout.countsLength else {
            throw StatisticsError(.invalidHistogram, detail: "expected \(layout.countsLength) counts, got \(counts.count)")
        }
        guard counts.allSatisfy({ $0 >= 0 }) else {
            throw StatisticsError(.invalidHistogram, detail: "negative count")
        }
        var total: Int64 = 0
        for count in counts {
            let (sum, overflow) = total.addingReportingOverflow(count)
            guard !overflow else { throw StatisticsError(.invalidHistogram, detail: "the counts add up past the largest count") }
            total = sum
        }
        self.layout = layout
        self.counts = counts
        totalCount = total
    }

    public var isEmpty: Bool { totalCount == 0 }

    /// Adds `count` occurrences of a latency in milliseconds.
    public mutating func record(_ milliseconds: Double, count: Int64 = 1) {
        precondition(count >= 0, "count must not be negative")
        // Held at the largest count rather than trapping: the histograms merged come from the
        // database, each valid alone, and sums of them are only ever read as quantiles.
        counts[layout.index(of: milliseconds)].addSaturated(count)
        totalCount.addSaturated(count)
    }

    /// Adds a latency given as a `Duration`.
    public mutating func record(_ duration: Duration, count: Int64 = 1) {
        let (seconds, attoseconds) = duration.components
        record(Double(seconds) * 1000 + Double(attoseconds) / 1e15, count: count)
    }

    /// Adds another histogram's counts; both must share a layout.
    public mutating func merge(_ other: LatencyHistogram) {
        precondition(layout == other.layout, "histograms with different layouts cannot merge")
        for index in counts.indices {
            counts[index].addSaturated(other.counts[index])
        }
        totalCount.addSaturated(other.totalCount)
    }

    /// The `q`-quantile (0...1) within the documented error bound; nil when empty.
    public func quantile(_ q: Double) -> Double? {
        precondition(q >= 0 && q <= 1, "quantile must be in [0, 1]")
        guard totalCount > 0 else { return nil }
        // Below 2^63, which a count near the largest rounds up to as a Double.
        let rank = Int64(min((q * Double(totalCount - 1)).rounded(.down), Double(Int64.max).nextDown))
        var cumulative: Int64 = 0
        for (index, count) in counts.enumerated() {
            cumulative.addSaturated(count)
            if cumulative > rank {
                return layout.representative(ofIndex: index)
            }
        }
        return layout.representative(ofIndex: counts.count - 1)
    }
}
