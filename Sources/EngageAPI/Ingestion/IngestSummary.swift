import EventStore
import Runtime

/// Logs one info line per interval with what ingestion did since the last one (the per-request
/// lines are at debug level).
public struct IngestSummary: Service {
    let metrics: IngestMetrics
    let queue: IngestQueue
    let interval: Duration
    let logger: Logger

    public init(metrics: IngestMetrics, queue: IngestQueue, interval: Duration = .seconds(60), logger: Logger) {
        self.metrics = metrics
        self.queue = queue
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        var last = (accepted: metrics.accepted.value, duplicates: metrics.duplicates.value, rejected: metrics.rejected.value)
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            let now = (accepted: metrics.accepted.value, duplicates: metrics.duplicates.value, rejected: metrics.rejected.value)
            if now != last {
                logger.info("ingest.summary", [
                    "events.accepted": String(now.accepted - last.accepted),
                    "events.duplicate": String(now.duplicates - last.duplicates),
                    "events.rejected": String(now.rejected - last.rejected),
                    "queue.events": String(queue.depth),
                    "interval.s": String(interval.components.seconds),
                ])
            }
            last = now
        }
    }
}
