import Runtime

/// Counters and histograms of the ingestion route, registered once and updated lock-free (the
/// committers' own are `CommitterMetrics`).
public struct IngestMetrics: Sendable {
    public let accepted: Counter
    public let duplicates: Counter
    public let rejected: Counter
    public let requestEvents: Histogram

    public init(registry: MetricsRegistry) {
        accepted = registry.counter("engage_events_accepted_total", help: "Events stored.")
        duplicates = registry.counter("engage_events_duplicate_total", help: "Events already stored (retries), not stored again.")
        rejected = registry.counter("engage_events_rejected_total", help: "Events refused by validation.")
        requestEvents = registry.histogram("engage_ingest_request_events", help: "Events per ingestion request.",
                                           buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000])
    }
}
