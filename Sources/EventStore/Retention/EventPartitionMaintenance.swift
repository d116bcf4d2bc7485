import Postgres
import Runtime

/// Makes the log's partitions a week ahead, at start and then every `interval`, so that appends
/// never wait for one (an append that finds none makes it itself), gives insert-driven vacuum back
/// to the weeks that have ended (`EventPartitions.reopenInsertVacuum`), and summarizes the ranges
/// of their `occurred_at` index that vacuum left (`OccurredAtSummaries`). Runs in every process
/// that appends for long: engage serve and engage scheduler.
public struct EventPartitionMaintenance: Service {
    public let pool: ConnectionPool
    public let interval: Duration
    public let logger: Logger

    /// How long one run may go without an answer, once it has its pooled connection, before it is interrupted (its connection
    /// closed) and tried again an interval later: a database that answers nothing (a frozen
    /// host) would otherwise keep the pooled connection it holds for as long as it stays so,
    /// even after a failover to another, and with a small pool every other user of the pool
    /// would wait for it. Making a week's partitions takes milliseconds, a step of summaries about
    /// `OccurredAtSummaries.stepBudget`.
    public let answerLimit: Duration

    public init(pool: ConnectionPool, interval: Duration = .seconds(3600), answerLimit: Duration = .seconds(30), logger: Logger) {
        self.pool = pool
        self.interval = interval
        self.answerLimit = answerLimit
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled {
            do {
                // The limit counts once the run has its connection: a wait behind the pool's
                // other users (long reads in engage serve) is no database that does not answer.
                let created = try await pool.withConnection(answerLimit: answerLimit) { connection in
                    try EventPartitions.ensure(on: connection)
                }
                if created > 0 { logger.info("log.partitions-created", ["count": String(created)]) }
                let found = try await pool.withConnection(answerLimit: answerLimit) { connection in
                    try EventPartitions.reopenInsertVacuum(on: connection)
                }
                report(found)
            } catch {
                // `DatabaseDidNotAnswer` past `answerLimit`, worded as every bounded service's.
                logger.warning("log.partitions-failed", ["error": "\(error)"])
            }
            await summarize()
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    private func report(_ found: EventPartitions.InsertVacuumReopening) {
        if !found.reopened.isEmpty { logger.info("log.partitions-vacuum-reopened", ["partitions": found.reopened.joined(separator: ",")]) }
        if !found.busy.isEmpty { logger.info("log.partitions-vacuum-deferred", ["partitions": found.busy.joined(separator: ",")]) }
        if !found.notOwned.isEmpty {
            logger.warning("log.partitions-vacuum-refused", [
                "partitions": found.notOwned.joined(separator: ","),
                "error": "must be owner of table (42501): run ALTER TABLE ... RESET (autovacuum_vacuum_insert_threshold) as its owner",
            ])
        }
    }

    /// One partition at a time, one step (`OccurredAtSummaries.stepBudget`, seconds) per pooled
    /// connection, so that the pool's other users wait at most for one step. A step is not
    /// interrupted when the service stops (it ends at a range's start within its budget; stopped
    /// inside a range it would leave a placeholder that nothing replaces, and the server notices a
    /// closed connection within a second, `client_connection_check_interval`), only past
    /// `answerLimit`. A partition the server refuses (one the role does not own, where another
    /// role ran the migrations) is logged and passed over: the newest weeks come last.
    func summarize() async {
        var ranges = 0
        var busy: [String] = []
        do {
            let partitions = try await pool.withConnection(answerLimit: answerLimit) { try EventPartitions.list(on: $0).map(\.name) }
            for partition in partitions {
                do {
                    let outcome = try await OccurredAtSummaries.summarize { fromBlock in
                        try await pool.withConnection(interruptingOnCancel: false, answerLimit: answerLimit) {
                            try OccurredAtSummaries.step(partition: partition, from: fromBlock, on: $0)
                        }
                    }
                    switch outcome {
                    case .summarized(let count): ranges += count
                    case .busy(let count): ranges += count; busy.append(partition)
                    case .gone: break
                    }
                } catch let error as PostgresError where error.sqlState != nil {
                    logger.warning("log.summaries-failed", ["partition": partition, "error": "\(error)"])
                }
            }
        } catch is CancellationError {
            return
        } catch {
            logger.warning("log.summaries-failed", ["error": "\(error)", "ranges": String(ranges)])
            return
        }
        if ranges > 0 { logger.info("log.ranges-summarized", ["ranges": String(ranges)]) }
        if !busy.isEmpty { logger.info("log.summaries-deferred", ["partitions": busy.joined(separator: ",")]) }
    }
}
