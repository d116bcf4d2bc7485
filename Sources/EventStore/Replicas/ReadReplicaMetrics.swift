import Runtime

/// What reading on a replica measures: reads it served, reads that fell back to the primary and
/// why, and the lag last measured.
public struct ReadReplicaMetrics: Sendable {
    public let replicaReads: Counter
    public let fallbacks: [ReadSource.Fallback: Counter]
    public let lagSeconds: Gauge

    public init(registry: MetricsRegistry) {
        replicaReads = registry.counter("engage_read_replica_reads_total", help: "Reads served by the read replica.")
        fallbacks = Dictionary(uniqueKeysWithValues: ReadSource.Fallback.allCases.map { reason in
            (reason, registry.counter("engage_read_replica_fallbacks_total",
                                      help: "Reads that went to the primary although a read replica is configured, by reason.",
                                      labels: ["reason": reason.rawValue]))
        })
        lagSeconds = registry.gauge("engage_read_replica_lag_seconds",
                                    help: "The read replica's replay lag when last measured (-1: unknown or unreachable).")
        // Not yet measured: unknown, never "in sync".
        lagSeconds.set(-1)
    }
}
