import Foundation
import Postgres
import Runtime
import Synchronization

/// Takes groups from the ingest queue and stores each in one transaction. Several run side by
/// side when there is backlog enough (see `IngestQueue`), so that one group's commit (and fsync)
/// overlaps the next group's COPY.
///
/// Each committer is a thread of its own with its own PostgreSQL connection (besides the pool's),
/// because a group commit is a serial step every small request waits for: through a task and the
/// pool, each commit would also wait for two thread hand-offs (the pool's thread to wake, then a
/// task thread to resume), a large share of a small commit (BENCHMARKS.md, "Group commit").
public struct Committer: Service {
    public let queue: IngestQueue
    public let database: PostgresConfiguration
    public let metrics: CommitterMetrics
    public let committers: Int
    public let logger: Logger

    public init(queue: IngestQueue, database: PostgresConfiguration, metrics: CommitterMetrics, committers: Int = 2,
                logger: Logger) {
        precondition(committers > 0, "ingestion needs at least one committer")
        self.queue = queue
        self.database = database
        self.metrics = metrics
        self.committers = committers
        self.logger = logger
    }

    /// Runs until cancelled, then drains: everything already queued is still committed and
    /// answered before the threads end and this returns.
    public func run() async throws {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
                let running = Countdown(committers) { ended.resume() }
                for index in 0..<committers {
                    let thread = Thread { [self] in
                        commitLoop()
                        running.countDown()
                    }
                    thread.name = "committer-\(index)"
                    thread.stackSize = 1 << 20
                    thread.start()
                }
            }
        } onCancel: {
            queue.close()
        }
    }

    private func commitLoop() {
        let connection = ReusableConnection(configuration: database)
        defer { connection.close() }
        let parker = IngestQueue.Parker()
        while let group = queue.takeGroup(parkingOn: parker) {
            let stopwatch = Stopwatch()
            let outcome = Result { try EventStore.append(group.map(\.batch), using: connection) }
            queue.groupFinished()
            switch outcome {
            case .success(let results):
                metrics.commitSeconds.observe(stopwatch.elapsed)
                metrics.groupEvents.observe(Double(group.reduce(0) { $0 + $1.batch.rowCount }))
                for (entry, result) in zip(group, results) { entry.complete(.success(result)) }
            case .failure(let error):
                metrics.commitFailures.increment()
                logger.warning("ingest.commit-failed", ["error": "\(error)", "requests": String(group.count)])
                for entry in group { entry.complete(.failure(error)) }
            }
        }
    }
}

/// Calls `whenZero` once, when the last of `count` threads has counted down.
private final class Countdown: Sendable {
    private let remaining: Atomic<Int>
    private let whenZero: @Sendable () -> Void

    init(_ count: Int, whenZero: @escaping @Sendable () -> Void) {
        remaining = Atomic(count)
        self.whenZero = whenZero
    }

    func countDown() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { whenZero() }
    }
}
