import EventStore
import Runtime

/// Takes groups from the ingest queue and stores each in one transaction. Several run side by
/// side when there is backlog enough (see `IngestQueue`), so that one group's commit (and fsync)
/// overlaps the next group's COPY.
public struct Committer: Service {
    public let queue: IngestQueue
    public let store: EventStore
    public let metrics: IngestMetrics
    public let committers: Int
    public let logger: Logger

    public init(queue: IngestQueue, store: EventStore, metrics: IngestMetrics, committers: Int = 2, logger: Logger) {
        self.queue = queue
        self.store = store
        self.metrics = metrics
        self.committers = committers
        self.logger = logger
    }

    /// Runs until cancelled, then drains: everything already queued is still committed and answered.
    public func run() async throws {
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for _ in 0..<committers {
                    group.addTask { await commitLoop() }
                }
            }
        } onCancel: {
            queue.close()
        }
    }

    private func commitLoop() async {
        while let group = await queue.takeGroup() {
            defer { queue.groupFinished() }
            let stopwatch = Stopwatch()
            do {
                let results = try await store.append(group.map(\.batch))
                metrics.commitSeconds.observe(stopwatch.elapsed)
                metrics.groupEvents.observe(Double(group.reduce(0) { $0 + $1.batch.rowCount }))
                for (entry, result) in zip(group, results) { entry.complete(.success(result)) }
            } catch {
                metrics.commitFailures.increment()
                logger.warning("ingest.commit-failed", ["error": "\(error)", "requests": String(group.count)])
                for entry in group { entry.complete(.failure(error)) }
            }
        }
    }
}
