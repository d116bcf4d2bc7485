import Runtime

/// The scheduler's metrics: analysis runs by outcome, their duration and the events folded.
public struct SchedulerMetrics: Sendable {
    public let done: Counter
    public let retried: Counter
    public let failed: Counter
    public let leaseLost: Counter
    /// Incremental looks given back while a prune or restore changed the log (`ExperimentLookDeferred`).
    public let deferred: Counter
    /// Scheduled runs closed without their analysis: the experiment was stopped meanwhile.
    public let skipped: Counter
    public let runSeconds: Histogram
    public let events: Counter

    public init(registry: MetricsRegistry) {
        let runs = "engage_scheduler_runs_total"
        let help = "Analysis runs by outcome: done (stored), retry (failed, given back), failed (for good), lease_lost, "
            + "deferred (an incremental look during engage log prune or restore, given back to run after its reset), "
            + "skipped (a scheduled run of an experiment stopped meanwhile, closed as failed without its analysis)."
        done = registry.counter(runs, help: help, labels: ["outcome": "done"])
        retried = registry.counter(runs, help: help, labels: ["outcome": "retry"])
        failed = registry.counter(runs, help: help, labels: ["outcome": "failed"])
        leaseLost = registry.counter(runs, help: help, labels: ["outcome": "lease_lost"])
        deferred = registry.counter(runs, help: help, labels: ["outcome": "deferred"])
        skipped = registry.counter(runs, help: help, labels: ["outcome": "skipped"])
        runSeconds = registry.histogram("engage_scheduler_run_seconds", help: "Time from claim to stored result of a run.",
                                        buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300])
        events = registry.counter("engage_scheduler_events_replayed_total",
                                  help: "Experiment events folded by analysis runs (by an incremental look: only the new ones; pre-period events not counted).")
    }
}
