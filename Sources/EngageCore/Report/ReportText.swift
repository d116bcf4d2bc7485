/// The report's own number formatting and HTML escaping, public for renderings of the report
/// outside this module (the web console), so that every figure prints as `engage report` prints it.
public enum ReportText {
    /// Printed where a value is undefined.
    public static var missing: String { ReportFormat.missing }

    /// `&`, `<`, `>`, `"` and `'` as character references.
    public static func html(_ text: String) -> String { HTMLText.escape(text) }

    /// `value` rounded half away from zero to `decimals` places, no exponent, no "-0".
    public static func fixed(_ value: Double, _ decimals: Int) -> String { ReportFormat.fixed(value, decimals) }

    /// `+1.5` / `-1.5` / `0.0`.
    public static func signed(_ value: Double, _ decimals: Int) -> String { ReportFormat.signed(value, decimals) }

    /// A rate as `30.8%`.
    public static func percent(_ rate: Double?, decimals: Int = 1) -> String { ReportFormat.percent(rate, decimals: decimals) }

    /// A rate with its interval: `30.8% [25.5–36.6]`.
    public static func rate(_ estimate: RateEstimate) -> String { ReportFormat.rate(estimate) }

    /// Absolute lift in percentage points with its interval: `+14.8 pp [+8.0, +21.4]`.
    public static func absoluteLift(_ comparison: MetricComparison) -> String { ReportFormat.absoluteLift(comparison) }

    /// Relative lift with its interval: `+92.5% [+37.3, +147.7]`.
    public static func relativeLift(_ comparison: MetricComparison) -> String { ReportFormat.relativeLift(comparison) }

    /// `<0.001`, `0.012`, `1.000`; more decimals where three would print the level `alpha`
    /// (0.05 unless given) for a p-value that is not exactly it.
    public static func pValue(_ p: Double?, alpha: Double = EngagementReport.alpha) -> String {
        ReportFormat.pValue(p, alpha: alpha)
    }

    /// `value` with a sign, rounded to `decimals` places, with more places where those would
    /// print `noEffect` for a value that is not exactly it (a bound of +0.0004 is `+0.0004`,
    /// not `0.0`).
    public static func signedBound(_ value: Double, _ decimals: Int, noEffect: Double) -> String {
        ReportFormat.signedBound(value, decimals, noEffect: noEffect)
    }

    /// `significant`, `small sample`, both, or `missing`.
    public static func flags(_ comparison: MetricComparison) -> String { ReportFormat.flags(comparison) }

    /// Milliseconds: one decimal below 10 ms, whole milliseconds above.
    public static func milliseconds(_ value: Double?) -> String { ReportFormat.milliseconds(value) }

    /// Bytes in binary units: `512 B`, `12.3 KiB`.
    public static func bytes(_ value: Double?) -> String { ReportFormat.bytes(value) }

    /// An extension outcome for people: `too large`, `download failed`.
    public static func outcome(_ outcome: DeliveryOutcome) -> String { EngagementReport.outcomeLabel(outcome) }

    /// The category and attachment kind of a telemetry summary for people.
    public static func telemetryLabels(_ summary: TelemetrySummary) -> (category: String, attachment: String) {
        EngagementReport.telemetryLabels(summary)
    }
}
