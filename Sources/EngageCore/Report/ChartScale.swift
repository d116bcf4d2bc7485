/// A linear scale over a range of values with round ticks, mapped onto a span of a chart: the
/// rates of the report's and the console's charts, the console's lifts.
public struct ChartScale: Sendable {
    public let lower: Double
    public let upper: Double
    public let step: Double

    /// The smallest round scale covering `values` (ticks at 1, 2, 2.5 or 5 times a power of ten),
    /// `including` a value that must show (0, the line of no effect); about `ticks` ticks.
    public init(covering values: [Double], including fixed: [Double] = [], ticks: Int = 5) {
        // Beyond ±1e300 a span or a step would be infinite (a stored result may hold anything).
        let all = (values + fixed).filter { $0.isFinite && abs($0) <= Self.largestMagnitude }
        var low = all.min() ?? 0
        var high = all.max() ?? 1
        if high - low < 1e-12 {
            low -= 0.5
            high += 0.5
        }
        let raw = (high - low) / Double(max(ticks, 1))
        var power = 1.0
        while power * 10 <= raw { power *= 10 }
        while power > raw { power /= 10 }
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * power }.first { $0 >= raw } ?? power * 10
        self.step = step
        lower = (low / step).rounded(.down) * step
        upper = (high / step).rounded(.up) * step
    }

    static let largestMagnitude = 1e300

    /// The report's rate axis: from 0 to the smallest of a few round maxima that shows `value` (0...1).
    public init(rateCovering value: Double) {
        let choices: [(Double, Double)] = [(0.05, 0.01), (0.1, 0.02), (0.2, 0.05), (0.3, 0.05), (0.5, 0.1),
                                           (0.75, 0.25), (1, 0.2)]
        let choice = choices.first { value <= $0.0 } ?? (1, 0.2)
        lower = 0
        upper = choice.0
        step = choice.1
    }

    public var ticks: [Double] {
        let count = Int(((upper - lower) / step).rounded())
        return (0...count).map { lower + Double($0) * step }
    }

    /// A tick's value times `factor` (100 for percent), with as many decimals as the step needs
    /// (none for 5, one for 2.5, two for 0.01: ticks of 0.01% must not all read 0.0%).
    public func label(_ tick: Double, times factor: Double = 1) -> String {
        var scaledStep = abs(step * factor)
        var decimals = 0
        while decimals < 15, abs(scaledStep - scaledStep.rounded()) > 1e-9 * max(1, scaledStep) {
            scaledStep *= 10
            decimals += 1
        }
        return ReportFormat.fixed(tick * factor, decimals)
    }

    public func position(_ value: Double, from start: Double, length: Double) -> Double {
        start + (min(max(value, lower), upper) - lower) / (upper - lower) * length
    }
}
