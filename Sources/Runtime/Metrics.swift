import Synchronization

/// A monotonically increasing count. Look it up once, keep it, increment it on the hot path.
public final class Counter: Sendable {
    private let storage = Atomic<Int>(0)

    init() {}

    public func increment(by amount: Int = 1) {
        precondition(amount >= 0, "a counter only goes up")
        storage.wrappingAdd(amount, ordering: .relaxed)
    }

    public var value: Int {
        storage.load(ordering: .relaxed)
    }
}

/// A value that goes up and down (queue depth, open connections).
public final class Gauge: Sendable {
    /// The `Double`'s bit pattern, so that updates stay lock-free.
    private let bits = Atomic<UInt64>(0.0.bitPattern)

    init() {}

    public func set(_ value: Double) {
        bits.store(value.bitPattern, ordering: .relaxed)
    }

    public func increment(by amount: Double = 1) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let next = (Double(bitPattern: current) + amount).bitPattern
            let (exchanged, original) = bits.compareExchange(
                expected: current, desired: next, ordering: .relaxed
            )
            if exchanged { return }
            current = original
        }
    }

    public func decrement(by amount: Double = 1) {
        increment(by: -amount)
    }

    public var value: Double {
        Double(bitPattern: bits.load(ordering: .relaxed))
    }
}

/// Observations counted into fixed buckets, with their sum and count (Prometheus histogram).
public final class Histogram: Sendable {
    /// The usual latency buckets in seconds.
    public static let defaultBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Snapshot {
        /// Cumulative counts per upper bound, `+Inf` last.
        var cumulativeCounts: [Int]
        var sum: Double
        var count: Int
    }

    private struct State {
        var counts: [Int]
        var sum: Double = 0
        var count: Int = 0
    }

    /// Upper bounds in increasing order, without `+Inf`.
    let upperBounds: [Double]
    private let state: Mutex<State>

    init(upperBounds: [Double]) {
        self.upperBounds = upperBounds
        self.state = Mutex(State(counts: Array(repeating: 0, count: upperBounds.count + 1)))
    }

    public func observe(_ value: Double) {
        let index = upperBounds.firstIndex { value <= $0 } ?? upperBounds.count
        state.withLock { state in
            state.counts[index] += 1
            state.sum += value
            state.count += 1
        }
    }

    /// Observes a duration in seconds, the Prometheus base unit.
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    var snapshot: Snapshot {
        state.withLock { state in
            var running = 0
            let cumulative = state.counts.map { count in
                running += count
                return running
            }
            return Snapshot(cumulativeCounts: cumulative, sum: state.sum, count: state.count)
        }
    }
}

/// One series' value at the time it was read.
public struct MetricSample: Sendable, Equatable {
    public var labels: [String: String]
    public var value: Double

    public init(labels: [String: String], value: Double) {
        self.labels = labels
        self.value = value
    }
}

/// The process's metrics, rendered in the Prometheus text exposition format 0.0.4.
///
/// Asking for a metric with the same name and labels twice returns the same instance. A name
/// belongs to one type (and, for histograms, one set of buckets); breaking that is a programming
/// error and stops the process. Lookups take a lock: do them at setup, not per request.
///
///     let appended = registry.counter("engage_events_appended_total", help: "Events appended to the log.")
///     appended.increment(by: batch.count)
public final class MetricsRegistry: Sendable {
    /// The `Content-Type` of `renderPrometheus()`'s output.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private enum Kind: String {
        case counter, gauge, histogram
    }

    private enum Series: Sendable {
        case counter(Counter)
        case gauge(Gauge)
        case gaugeFunction(@Sendable () -> Double)
        case counterFunction(@Sendable () -> Int)
        case histogram(Histogram)
    }

    private struct Family: Sendable {
        var kind: Kind
        var help: String
        var buckets: [Double]
        /// Keyed by the rendered label set, e.g. `method="GET",route="/v1/events"`.
        var series: [String: Series]
        /// The labels of each series, by the same key.
        var labels: [String: [String: String]] = [:]
    }

    private let families = Mutex<[String: Family]>([:])

    public init() {}

    public func counter(_ name: String, help: String, labels: [String: String] = [:]) -> Counter {
        let series = register(name, .counter, help: help, labels: labels) { .counter(Counter()) }
        guard case .counter(let counter) = series else {
            preconditionFailure("metric \(name) with these labels is already a closure-backed counter")
        }
        return counter
    }

    /// A counter kept elsewhere (e.g. by the HTTP server), read by calling `value` at scrape
    /// time; it must never decrease. Registering the same name and labels again replaces the closure.
    public func counter(_ name: String, help: String, labels: [String: String] = [:], value: @escaping @Sendable () -> Int) {
        register(name, .counter, help: help, labels: labels, replacing: true) { .counterFunction(value) }
    }

    public func gauge(_ name: String, help: String, labels: [String: String] = [:]) -> Gauge {
        let series = register(name, .gauge, help: help, labels: labels) { .gauge(Gauge()) }
        guard case .gauge(let gauge) = series else {
            preconditionFailure("metric \(name) with these labels is already a closure-backed gauge")
        }
        return gauge
    }

    /// A gauge whose value is read by calling `value` at scrape time (pool sizes, lag).
    /// Registering the same name and labels again replaces the closure. The closure runs outside
    /// the registry's lock.
    public func gauge(
        _ name: String, help: String, labels: [String: String] = [:],
        value: @escaping @Sendable () -> Double
    ) {
        register(name, .gauge, help: help, labels: labels, replacing: true) { .gaugeFunction(value) }
    }

    public func histogram(
        _ name: String, help: String, buckets: [Double] = Histogram.defaultBuckets,
        labels: [String: String] = [:]
    ) -> Histogram {
        let bounds = Array(Set(buckets.filter { $0 != .infinity })).sorted()
        precondition(bounds.allSatisfy(\.isFinite), "histogram \(name): bucket bounds must be numbers")
        precondition(labels["le"] == nil, "histogram \(name): the label name le is reserved")
        let series = register(name, .histogram, help: help, labels: labels, buckets: bounds) {
            .histogram(Histogram(upperBounds: bounds))
        }
        guard case .histogram(let histogram) = series else { preconditionFailure("unreachable") }
        return histogram
    }

    @discardableResult
    private func register(
        _ name: String, _ kind: Kind, help: String, labels: [String: String],
        buckets: [Double] = [], replacing: Bool = false, make: () -> Series
    ) -> Series {
        precondition(Self.isValidMetricName(name), "invalid metric name \(name)")
        for label in labels.keys {
            precondition(Self.isValidLabelName(label), "metric \(name): invalid label name \(label)")
        }
        let key = Self.renderLabels(labels)
        return families.withLock { families in
            var family = families[name] ?? Family(kind: kind, help: help, buckets: buckets, series: [:])
            precondition(family.kind == kind, "metric \(name) is a \(family.kind.rawValue), not a \(kind.rawValue)")
            precondition(family.buckets == buckets, "histogram \(name) was registered with other buckets")
            if !replacing, let existing = family.series[key] {
                return existing
            }
            let series = make()
            family.series[key] = series
            family.labels[key] = labels
            families[name] = family
            return series
        }
    }

    /// The current value of every series of the counter or gauge `name`, with its labels; empty
    /// when there is no such metric (or it is a histogram). For pages that show a few metrics
    /// (the console), not for scraping.
    public func samples(_ name: String) -> [MetricSample] {
        guard let family = families.withLock({ $0[name] }) else { return [] }
        return family.series.keys.sorted().compactMap { key in
            let value: Double
            switch family.series[key]! {
            case .counter(let counter): value = Double(counter.value)
            case .gauge(let gauge): value = gauge.value
            case .gaugeFunction(let read): value = read()
            case .counterFunction(let read): value = Double(read())
            case .histogram: return nil
            }
            return MetricSample(labels: family.labels[key] ?? [:], value: value)
        }
    }

    /// Every metric in the text exposition format 0.0.4: families sorted by name, series by
    /// label set, each family introduced by its `# HELP` and `# TYPE` lines.
    public func renderPrometheus() -> String {
        let snapshot = families.withLock { $0 }
        var output = ""
        for name in snapshot.keys.sorted() {
            let family = snapshot[name]!
            output += "# HELP \(name) \(Self.escaped(family.help, quotes: false))\n"
            output += "# TYPE \(name) \(family.kind.rawValue)\n"
            for labels in family.series.keys.sorted() {
                switch family.series[labels]! {
                case .counter(let counter):
                    output += Self.sample(name, labels, String(counter.value))
                case .gauge(let gauge):
                    output += Self.sample(name, labels, Self.formatNumber(gauge.value))
                case .gaugeFunction(let read):
                    output += Self.sample(name, labels, Self.formatNumber(read()))
                case .counterFunction(let read):
                    output += Self.sample(name, labels, String(read()))
                case .histogram(let histogram):
                    let values = histogram.snapshot
                    let separator = labels.isEmpty ? "" : ","
                    for (index, count) in values.cumulativeCounts.enumerated() {
                        let bound = index < family.buckets.count ? Self.formatNumber(family.buckets[index]) : "+Inf"
                        output += Self.sample(name + "_bucket", labels + separator + "le=\"\(bound)\"", String(count))
                    }
                    output += Self.sample(name + "_sum", labels, Self.formatNumber(values.sum))
                    output += Self.sample(name + "_count", labels, String(values.count))
                }
            }
        }
        return output
    }

    private static func sample(_ name: String, _ labels: String, _ value: String) -> String {
        labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
    }

    static func renderLabels(_ labels: [String: String]) -> String {
        labels.keys.sorted().map { "\($0)=\"\(escaped(labels[$0]!, quotes: true))\"" }.joined(separator: ",")
    }

    /// Whole numbers without a fraction (`3`), others in Swift's shortest form (`0.005`),
    /// and `+Inf`, `-Inf`, `NaN` as Prometheus spells them.
    static func formatNumber(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value == .infinity { return "+Inf" }
        if value == -.infinity { return "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 {
            return String(Int64(value))
        }
        return String(value)
    }

    /// The exposition format's escapes: backslash and line feed in help text, and double quotes
    /// as well in label values.
    static func escaped(_ text: String, quotes: Bool) -> String {
        var result = ""
        for character in text.unicodeScalars {
            switch character {
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\"" where quotes: result += "\\\""
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    static func isValidMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, isLetter(first) || first == "_" || first == ":" else {
            return false
        }
        return name.unicodeScalars.allSatisfy { isLetter($0) || isDigit($0) || $0 == "_" || $0 == ":" }
    }

    static func isValidLabelName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, isLetter(first) || first == "_", !name.hasPrefix("__") else {
            return false
        }
        return name.unicodeScalars.allSatisfy { isLetter($0) || isDigit($0) || $0 == "_" }
    }

    private static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool {
        ("0"..."9").contains(scalar)
    }
}
