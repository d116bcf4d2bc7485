import EngageCore
import Postgres
import Runtime

/// Writes the window this engage serve accepts to `ingest_windows` at start and every
/// `interval` (`IngestWindows`), for `engage log prune`.
public struct IngestWindowRecorder: Service {
    public let pool: ConnectionPool
    public let limits: EventLimits
    public let interval: Duration
    public let logger: Logger

    public init(pool: ConnectionPool, limits: EventLimits, interval: Duration = .seconds(3600), logger: Logger) {
        self.pool = pool
        self.limits = limits
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        let limits = self.limits
        while !Task.isCancelled {
            do {
                try await pool.withConnection(answerLimit: .seconds(30)) { try IngestWindows.record(limits, on: $0) }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("ingest.window-not-recorded", ["error": "\(error)"])
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }
}
