import Runtime

/// Counters and histograms of the ingestion path, registered once and updated lock-free.
public struct IngestMetrics: Sendable {
    public let accepted: Counter
    public let duplicates: Counter
    public let rejected: Counter
    public let requestEvents: Histogram
    public let groupEvents: Histogram
    public let commitSeconds: Histogram
    public let commitFailures: Counter

    public init(registry: MetricsRegistry) {
        accepted = registry.counter("engage_events_accepted_total", help: "Events stored.")
        duplicates = registry.counter("engage_events_duplicate_total", help: "Events already stored (retries), not stored again.")
        rejected = registry.counter("engage_events_rejected_total", help: "Events refused by validation.")
        requestEvents = registry.histogram("engage_ingest_request_events", help: "Events per ingestion request.",
                                           buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000])
        groupEvents = registry.histogram("engage_ingest_commit_events", help: "Events per group-commit transaction.",
                                         buckets: [1, 10, 50, 100, 500, 1000, 2000, 5000, 10000])
        commitSeconds = registry.histogram("engage_ingest_commit_seconds", help: "Time to store and commit one group, on its committer's connection (reconnecting included).",
                                           buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
        commitFailures = registry.counter("engage_ingest_commit_failures_total", help: "Group commits that failed (answered 503).")
    }
}
