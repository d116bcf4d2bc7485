import Runtime

/// Keeps monthly partitions of the log created ahead of time: at start and then daily.
public struct PartitionMaintenance: Service {
    public let store: EventStore
    public let interval: Duration
    public let logger: Logger

    public init(store: EventStore, interval: Duration = .seconds(86_400), logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled {
            do {
                let created = try await store.ensurePartitions()
                if created > 0 { logger.info("partitions.created", ["count": String(created)]) }
            } catch {
                logger.warning("partitions.failed", ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
