import EngageConsole
import Runtime
import Synchronization

/// Reads the ingestion counters every `interval` and keeps the last hour of readings, so that the
/// console can show events per second over the last minutes and a line of the last hour. Counters
/// only count up; a rate is the difference of two readings over the time between them.
public final class IngestionRateSampler: Service {
    struct Reading: Sendable {
        var at: ContinuousClock.Instant
        var accepted: Int
        var duplicates: Int
        var rejected: Int
    }

    let metrics: IngestMetrics
    let time: any TimeSource
    public let interval: Duration
    /// Readings kept: an hour's and one more, so that the hour has as many intervals.
    let capacity: Int
    private let readings = Mutex<[Reading]>([])

    public init(metrics: IngestMetrics, time: any TimeSource, interval: Duration = .seconds(10)) {
        self.metrics = metrics
        self.time = time
        self.interval = interval
        capacity = Int(3_600 / max(1, interval.components.seconds)) + 1
    }

    public func run() async throws {
        while !Task.isCancelled {
            record()
            do { try await time.sleep(for: interval) } catch { return }
        }
    }

    /// Takes a reading now.
    func record() {
        let reading = current()
        readings.withLock { readings in
            readings.append(reading)
            if readings.count > capacity { readings.removeFirst(readings.count - capacity) }
        }
    }

    private func current() -> Reading {
        Reading(at: time.now, accepted: metrics.accepted.value, duplicates: metrics.duplicates.value, rejected: metrics.rejected.value)
    }

    /// Events per second from the oldest reading at most `seconds` old to now; nil before a reading
    /// at least one second old exists.
    func rates(over seconds: Int) -> IngestionHealth.Rates {
        let now = current()
        let window = Duration.seconds(seconds)
        let since = readings.withLock { readings in readings.first { $0.at.duration(to: now.at) <= window } }
        guard let since, since.at.duration(to: now.at) >= .seconds(1) else {
            return IngestionHealth.Rates(window: seconds, observed: nil, accepted: nil, duplicates: nil, rejected: nil)
        }
        let elapsed = Self.seconds(since.at.duration(to: now.at))
        return IngestionHealth.Rates(window: seconds, observed: elapsed, accepted: Double(now.accepted - since.accepted) / elapsed,
                                     duplicates: Double(now.duplicates - since.duplicates) / elapsed,
                                     rejected: Double(now.rejected - since.rejected) / elapsed)
    }

    /// Events accepted per second in each interval between readings, oldest first.
    func acceptedHistory() -> [Double] {
        let all = readings.withLock { $0 }
        return zip(all, all.dropFirst()).map { earlier, later in
            Double(later.accepted - earlier.accepted) / max(Self.seconds(earlier.at.duration(to: later.at)), 1e-9)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
