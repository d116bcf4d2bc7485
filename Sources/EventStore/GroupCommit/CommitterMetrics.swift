import Runtime

/// What the committers measure, registered once and updated lock-free.
public struct CommitterMetrics: Sendable {
    public let groupEvents: Histogram
    public let commitSeconds: Histogram
    public let commitFailures: Counter
    public let commitTimeouts: Counter
    public let commitsUnconfirmed: Counter

    public init(registry: MetricsRegistry) {
        groupEvents = registry.histogram("engage_ingest_commit_events", help: "Events per group-commit transaction.",
                                         buckets: [1, 10, 50, 100, 500, 1000, 2000, 5000, 10000])
        commitSeconds = registry.histogram("engage_ingest_commit_seconds", help: "Time to store and commit one group, on its committer's connection (reconnecting included).",
                                           buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
        commitFailures = registry.counter("engage_ingest_commit_failures_total", help: "Commits that failed: a whole group's, or in a group split to find a refused row each request's own (answered 503; 500 for a request the database refuses alone).")
        commitTimeouts = registry.counter("engage_ingest_commit_timeouts_total",
                                          help: "Group commits interrupted after the commit timeout (answered 503; also counted as failures).")
        commitsUnconfirmed = registry.counter("engage_ingest_commit_unconfirmed_total",
                                              help: "Group commits the configured synchronous standbys were not known to have (a warning during the commit, "
                                                  + "or the standbys' positions after it): answered 503, also counted as failures.")
    }
}
