/// Number formatting shared by the table and the HTML page: fixed decimals, locale-free, the
/// same on every platform, and never "nan" (undefined values print as `missing`).
enum ReportFormat {
    /// Printed where a value is undefined.
    static let missing = "—"

    /// `value` rounded half away from zero to `decimals` places, no exponent, no "-0".
    static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return missing }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e15 else { return value < 0 ? "-" + String(abs(value)) : String(value) }
        let units = UInt64(scaled)
        var digits = String(units)
        if decimals > 0 {
            if digits.count <= decimals { digits = String(repeating: "0", count: decimals - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -decimals))
        }
        return (value < 0 && units != 0 ? "-" : "") + digits
    }

    /// `+1.5` / `-1.5` / `0.0`.
    static func signed(_ value: Double, _ decimals: Int) -> String {
        let text = fixed(value, decimals)
        return value > 0 && text.contains(where: { $0 != "0" && $0 != "." }) ? "+" + text : text
    }

    /// An interval's bound with `decimals` places, or more when those would print it as "no
    /// effect" (`noEffect`) while it is not: a significant ratio's lower bound of 1.004 prints
    /// `1.004`, never `1.00`, so that the printed interval agrees with the word beside it. As
    /// many places are added as that takes: with a billion notifications a side a significant
    /// bound can be 1.000000006. Past 20 places (a bound within 1e-20 of 0) the value prints as
    /// Swift writes it, exponent and all, rather than as no effect.
    static func bound(_ value: Double, _ decimals: Int, noEffect: Double) -> String {
        var places = decimals
        var text = fixed(value, places)
        while value != noEffect, Double(text) == noEffect {
            guard places < 20 else { return String(value) }
            places += 1
            text = fixed(value, places)
        }
        return text
    }

    /// `bound` with a sign, as `signed`.
    static func signedBound(_ value: Double, _ decimals: Int, noEffect: Double) -> String {
        let text = bound(value, decimals, noEffect: noEffect)
        return value > 0 && text.contains(where: { $0 != "0" && $0 != "." }) ? "+" + text : text
    }

    /// A rate as `30.8%`. A rate strictly between 0 and 1 that would round to one of them reads
    /// `<0.1%` or `>99.9%`: 9,996 of 10,000 is not everyone, 1 of 5,000 not no one.
    static func percent(_ rate: Double?, decimals: Int = 1) -> String {
        guard let rate else { return missing }
        let text = fixed(rate * 100, decimals)
        var step = 1.0
        for _ in 0..<decimals { step /= 10 }
        if rate > 0 && text == fixed(0, decimals) { return "<" + fixed(step, decimals) + "%" }
        if rate < 1 && text == fixed(100, decimals) { return ">" + fixed(100 - step, decimals) + "%" }
        return text + "%"
    }

    /// A rate with its interval: `30.8% [25.5–36.6]`.
    static func rate(_ estimate: RateEstimate) -> String {
        guard let rate = estimate.rate, let interval = estimate.interval else { return missing }
        return percent(rate) + " [" + fixed(interval.lower * 100, 1) + "–" + fixed(interval.upper * 100, 1) + "]"
    }

    /// Absolute lift in percentage points: `+14.8 pp [+8.0, +21.4]`.
    static func absoluteLift(_ comparison: MetricComparison) -> String {
        lift(comparison.absoluteLift, comparison.absoluteInterval, unit: " pp")
    }

    /// Relative lift: `+92.5% [+37.3, +147.7]`.
    static func relativeLift(_ comparison: MetricComparison) -> String {
        lift(comparison.relativeLift, comparison.relativeInterval, unit: "%")
    }

    /// A lift times 100 with its unit, then its interval when there is one.
    private static func lift(_ lift: Double?, _ interval: ConfidenceInterval?, unit: String) -> String {
        guard let lift else { return missing }
        var text = signed(lift * 100, 1) + unit
        if let interval {
            text += " [" + signedBound(interval.lower * 100, 1, noEffect: 0) + ", "
                + signedBound(interval.upper * 100, 1, noEffect: 0) + "]"
        }
        return text
    }

    /// A ratio with its interval and significance: `1.06x [0.96, 1.17]`, `*` when significant;
    /// an estimate or bound that would round to no effect without being it gets more places.
    static func ratio(_ estimate: EffectEstimate?) -> String {
        guard let estimate else { return missing }
        return bound(estimate.estimate, 2, noEffect: 1) + "x [" + bound(estimate.interval.lower, 2, noEffect: 1) + ", "
            + bound(estimate.interval.upper, 2, noEffect: 1) + "]" + (estimate.isSignificant ? " *" : "")
    }

    /// A difference of rates in percentage points: `+0.8 pp [-0.7, +2.4]`, `*` when significant.
    static func difference(_ estimate: EffectEstimate?) -> String {
        guard let estimate else { return missing }
        return signedBound(estimate.estimate * 100, 1, noEffect: 0) + " pp [" + signedBound(estimate.interval.lower * 100, 1, noEffect: 0)
            + ", " + signedBound(estimate.interval.upper * 100, 1, noEffect: 0) + "]" + (estimate.isSignificant ? " *" : "")
    }

    /// `agree`, `DIRECTION differs`, `SIGNIFICANCE differs`, `DIRECTION and SIGNIFICANCE differ`;
    /// `missing` without both figures, or with one category and none left out.
    static func disagreement(_ summary: StratifiedMetricSummary) -> String {
        guard summary.crudeCompared else { return missing }
        guard let disagreement = summary.crudeDisagreement else { return "agree" }
        var parts: [String] = []
        if disagreement.direction { parts.append("DIRECTION") }
        if disagreement.significance { parts.append("SIGNIFICANCE") }
        return parts.joined(separator: " and ") + (parts.count == 1 ? " differs" : " differ")
    }

    /// `<0.001`, `0.012`, `1.000`; near the significance level more places (`0.0496`), so that a
    /// significant figure never shows "0.050".
    /// A p-value: `<0.001`, else three decimals, more when those would print `alpha` itself for
    /// a p-value that is not (0.0104 against 0.01 reads "0.0104", not "0.010").
    static func pValue(_ p: Double?, alpha: Double = EngagementReport.alpha) -> String {
        guard let p else { return missing }
        return p < 0.001 ? "<0.001" : bound(p, 3, noEffect: alpha)
    }

    /// `significant`, `small sample`, both, or `missing`.
    static func flags(_ comparison: MetricComparison) -> String {
        var flags: [String] = []
        if comparison.significant == true { flags.append("significant") }
        if comparison.smallSample { flags.append("small sample") }
        return flags.isEmpty ? missing : flags.joined(separator: ", ")
    }

    /// Milliseconds: one decimal below 10 ms, whole milliseconds above.
    static func milliseconds(_ value: Double?) -> String {
        guard let value else { return missing }
        return fixed(value, value < 10 ? 1 : 0)
    }

    /// `p50 / p95 / p99` in milliseconds.
    static func percentiles(_ latency: LatencyPercentiles) -> String {
        guard latency.count > 0 else { return missing }
        return [latency.p50, latency.p95, latency.p99].map(milliseconds).joined(separator: " / ")
    }

    /// Bytes in binary units: `512 B`, `12.3 KiB`, `4.5 MiB`, `1.2 GiB`.
    static func bytes(_ value: Double?) -> String {
        guard let value else { return missing }
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var scaled = value
        var unit = 0
        while abs(scaled) >= 1024 && unit < units.count - 1 {
            scaled /= 1024
            unit += 1
        }
        return (unit == 0 ? fixed(scaled, 0) : fixed(scaled, 1)) + " " + units[unit]
    }

    /// `count (share)`: `80 (80.0%)`.
    static func countAndShare(_ count: Int, _ share: Double?) -> String {
        share.map { "\(count) (\(percent($0)))" } ?? String(count)
    }

    /// Splits `text` into lines of at most `width` characters at spaces.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}

extension EngagementReport {
    /// Names of the outcomes for people, in `DeliveryOutcome.allCases` order.
    static func outcomeLabel(_ outcome: DeliveryOutcome) -> String {
        switch outcome {
        case .attached: "attached"
        case .timeout: "timeout"
        case .tooLarge: "too large"
        case .unsupportedFormat: "unsupported"
        case .downloadFailed: "download failed"
        case .notRequested: "not requested"
        }
    }

    /// The filters for people, `none` when nothing is filtered.
    var filterText: String {
        let summary = filters.summary
        return summary.isEmpty ? "none" : summary.map { "\($0.name): \($0.value)" }.joined(separator: "; ")
    }

    /// The category and kind of a telemetry summary for people.
    static func telemetryLabels(_ summary: TelemetrySummary) -> (category: String, attachment: String) {
        (summary.category ?? "all categories", summary.attachmentKind ?? "all kinds")
    }
}
