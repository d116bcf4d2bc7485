import EngageCore
import Runtime
import Synchronization

/// Counters and histograms of the ingestion route, registered once and updated lock-free (the
/// committers' own are `CommitterMetrics`).
public struct IngestMetrics: Sendable {
    public let accepted: Counter
    public let duplicates: Counter
    public let rejected: Counter
    public let requestEvents: Histogram
    /// Requests whose device clock was off by what `ClockCorrection` undoes: their times may have moved.
    public let clockCorrected: Counter
    private let rejectedByField: FieldCounters

    public init(registry: MetricsRegistry) {
        accepted = registry.counter("engage_events_accepted_total", help: "Events stored.")
        duplicates = registry.counter("engage_events_duplicate_total", help: "Events already stored (retries), not stored again.")
        rejected = registry.counter("engage_events_rejected_total", help: "Events refused by validation, or by PostgreSQL after it (not-storable).")
        requestEvents = registry.histogram("engage_ingest_request_events", help: "Events per ingestion request.",
                                           buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000])
        clockCorrected = registry.counter("engage_ingest_clock_corrected_requests_total",
                                          help: "Ingestion requests whose Engage-Sent-At showed a device clock 60 s to 12 h ahead, or behind with events on the sending clock: requests whose times may have moved.")
        rejectedByField = FieldCounters(registry: registry)
    }

    /// Counts rejected events, in all and by the field at fault.
    public func countRejections(_ rejections: [Rejection]) {
        rejected.increment(by: rejections.count)
        for rejection in rejections { rejectedByField.counter(Self.reason(rejection)).increment() }
    }

    /// The reason of an event PostgreSQL refused after validation let it through
    /// (`IngestRoute.notStorableProblem`): the first word of its problem.
    static let notStorable = "not-storable"

    /// The label of a rejection: the top-level field at fault (`media` for `media[2].format`),
    /// `event` for the event as a whole, `not-storable` for an event PostgreSQL refused,
    /// `unknown field` for a field the schema does not have (whose name the client chose: it
    /// never becomes a label).
    static func reason(_ rejection: Rejection) -> String {
        guard let field = rejection.field else {
            return rejection.problem.hasPrefix(notStorable + ":") ? notStorable : "event"
        }
        if rejection.problem == "unknown field" { return "unknown field" }
        return String(field.prefix { $0 != "." && $0 != "[" })
    }
}

/// `engage_events_rejected_by_field_total{field}`, one counter per label looked up once.
private final class FieldCounters: Sendable {
    let registry: MetricsRegistry
    private let counters = Mutex<[String: Counter]>([:])

    init(registry: MetricsRegistry) {
        self.registry = registry
    }

    func counter(_ field: String) -> Counter {
        if let counter = counters.withLock({ $0[field] }) { return counter }
        let counter = registry.counter("engage_events_rejected_by_field_total", help: "Events refused by validation, by the field at fault (not-storable: by PostgreSQL).",
                                       labels: ["field": field])
        counters.withLock { $0[field] = counter }
        return counter
    }
}
