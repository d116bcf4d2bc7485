/// Why a statistic could not be computed from the data at hand.
///
/// These are data conditions, not programming errors: a report shows them ("not enough data")
/// instead of a number. Arguments that only a programming error can produce, such as a
/// confidence level outside (0, 1), stop the process with a precondition instead.
public struct StatisticsError: Error, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Stable, machine-readable reason.
    public enum Code: String, Hashable, Sendable {
        /// Negative counts, or more successes than trials.
        case invalidCounts = "invalid_counts"
        /// A group has fewer than two units, too few for a mean and a variance.
        case tooFewUnits = "too_few_units"
        /// The control mean is zero, so a relative lift is undefined.
        case zeroBaseline = "zero_baseline"
        /// A group's variance is zero (a rate of exactly 0 or 1), so the normal approximation
        /// has nothing to scale by.
        case zeroVariance = "zero_variance"
        /// A mean is zero or negative (a regression-adjusted one can be), so its logarithm is
        /// undefined.
        case nonPositiveMean = "non_positive_mean"
        /// Histogram counts that do not fit the layout: wrong length or a negative count.
        case invalidHistogram = "invalid_histogram"
        /// Too few strata have trials on both sides: none for a stratified summary, fewer than
        /// two for a test that strata agree.
        case tooFewStrata = "too_few_strata"
        /// A ratio is 0 or infinite (a group without successes), so its logarithm, and an
        /// interval built on it, is undefined.
        case undefinedLogRatio = "undefined_log_ratio"
    }

    public let code: Code
    /// Details for logs; may name the offending values.
    public let detail: String

    public init(_ code: Code, detail: String = "") {
        self.code = code
        self.detail = detail
    }

    public var description: String {
        switch code {
        case .invalidCounts: "counts are negative or successes exceed trials"
        case .tooFewUnits: "a group has fewer than two units"
        case .zeroBaseline: "the control mean is zero, so a relative lift is undefined"
        case .zeroVariance: "a group has zero variance"
        case .nonPositiveMean: "a mean is not above zero, so a log ratio is undefined"
        case .invalidHistogram: "histogram counts do not fit the layout"
        case .tooFewStrata: "too few strata have trials in both groups"
        case .undefinedLogRatio: "a group has no successes, so the logarithm of the ratio is undefined"
        }
    }

    public var debugDescription: String {
        detail.isEmpty ? "StatisticsError(\(code.rawValue))" : "StatisticsError(\(code.rawValue)): \(detail)"
    }

    /// Errors are equal when their codes are: the detail is for people, the code for programs.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
