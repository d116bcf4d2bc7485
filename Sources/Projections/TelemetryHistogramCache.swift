/// The latency histograms of the `extension_telemetry_daily` rows the batcher wrote, as its
/// committed batches left them, so that a batch adds its histogram changes without reading the
/// stored arrays back (the rows' counters are added in the upsert itself and need no cache).
///
/// Safe for the same reason as the batcher's other caches: recorded only after the batch
/// committed, and each batch proves under the checkpoint's row lock that nobody else wrote the
/// read model in between (a fenced batcher forgets it).
struct TelemetryHistogramCache: Sendable {
    typealias Key = EngagementChanges.TelemetryKey

    struct Histograms: Sendable, Equatable {
        var downloads: [Int64] = []
        var processing: [Int64] = []
    }

    let limit: Int
    private var rows: [Key: Histograms] = [:]
    /// True when every stored row is in `rows` (the table was empty when the cache started and
    /// nothing was forgotten since): then a key missing here has no row.
    private(set) var isComplete: Bool

    init(limit: Int, isComplete: Bool) {
        self.limit = limit
        self.isComplete = isComplete
    }

    /// The histograms of `keys` the cache knows, by index in `keys`, and the indices of those
    /// that must be read from the table (none when complete).
    func lookup(_ keys: [Key]) -> (known: [Int: Histograms], unknown: [Int]) {
        var known: [Int: Histograms] = [:], unknown: [Int] = []
        for (index, key) in keys.enumerated() {
            if let histograms = rows[key] { known[index] = histograms } else if !isComplete { unknown.append(index) }
        }
        return (known, unknown)
    }

    /// Records the histograms a committed batch wrote; nil (the batch removed a row, which is
    /// rare: every notification left its bucket) or outgrowing the limit forgets everything.
    mutating func record(_ written: [Key: Histograms]?) {
        guard let written, rows.count + written.count <= limit else {
            rows.removeAll()
            isComplete = false
            return
        }
        rows.merge(written) { _, new in new }
    }
}
