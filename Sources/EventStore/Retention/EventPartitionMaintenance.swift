import Postgres
import Runtime

/// Makes the log's partitions a week ahead, at start and then every `interval`, so that appends
/// never wait for one (an append that finds none makes it itself). Runs in every process that
/// appends for long: engage serve and engage scheduler.
public struct EventPartitionMaintenance: Service {
    public let pool: ConnectionPool
    public let interval: Duration
    public let logger: Logger

    public init(pool: ConnectionPool, interval: Duration = .seconds(3600), logger: Logger) {
        self.pool = pool
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled {
            do {
                let created = try await pool.withConnection { connection in try EventPartitions.ensure(on: connection) }
                if created > 0 { logger.info("log.partitions-created", ["count": String(created)]) }
            } catch {
                logger.warning("log.partitions-failed", ["error": "\(error)"])
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }
}
