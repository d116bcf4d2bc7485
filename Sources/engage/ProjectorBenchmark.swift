import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Runtime

/// `engage bench project`: projector catch-up speed from an empty read model.
enum ProjectorBenchmark {
    static let events = Option("events", value: "n", help: "Events in the log (four per notification).", default: 1_000_000,
                               validate: .range(4_000...100_000_000))
    static let rounds = Option("rounds", value: "n", help: "Catch-ups measured; medians are reported.", default: 3, validate: .range(1...20))
    static let batch = Option("batch", value: "n", help: "Events per projector batch.", default: Projector.Configuration().batchSize,
                              validate: .range(100...100_000))

    static let definition = Command(
        name: "project",
        abstract: "Measure the projector catching up from an empty read model over a log of N events (four per notification).",
        options: CommonOptions.databaseAndLogging + [events, rounds, batch],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.quietLogger(arguments)
        let events = arguments[Self.events]
        let rounds = arguments[Self.rounds]
        let batch = arguments[Self.batch]
        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: false)
        defer { setup.close() }
        let configuration = try BenchCommand.database(named: "engage_bench_project", beside: setup)
        let pool = ConnectionPool(configuration: configuration, size: 4)
        let store = EventStore(pool: pool)

        let progress = ProgressLine.standardError("bench project")
        let notifications = events / 4
        try await fillLog(store: store, pool: pool, notifications: notifications, progress: progress)
        let logged = try await pool.withConnection { try $0.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self) }
        progress.print("log: \(logged) events of \(notifications) notifications")

        var seconds: [Double] = []
        for round in 1...rounds {
            try await resetReadModel(pool)
            var projectorConfiguration = Projector.Configuration()
            projectorConfiguration.batchSize = batch
            projectorConfiguration.pollInterval = .milliseconds(20)
            let projector = Projector(pool: pool, configuration: projectorConfiguration, logger: logger,
                                      metrics: ProjectorMetrics(registry: MetricsRegistry()))
            let stopwatch = Stopwatch()
            let running = Task { try await projector.run() }
            while true {
                let processed = try await pool.withConnection { connection in
                    try connection.query("SELECT coalesce(max(events_processed), 0) FROM projection_checkpoints WHERE projection = 'engagement'")[0].decode(0, as: Int.self)
                }
                if processed >= logged { break }
                progress.update("round \(round)/\(rounds), \(ProgressLine.grouped(processed))/\(ProgressLine.grouped(logged)) events folded")
                try await Task.sleep(for: .milliseconds(20))
            }
            let elapsed = stopwatch.elapsed.seconds
            running.cancel()
            _ = try? await running.value
            seconds.append(elapsed)
            progress.print(String(format: "round %d: caught up with %d events in %.2f s: %.0f events/s", round, logged, elapsed, Double(logged) / elapsed))
        }
        progress.finish()
        let median = BenchCommand.median(seconds)
        let counted = try await pool.withConnection { try $0.query("SELECT sum(notifications)::int8 FROM engagement_daily")[0].decode(0, as: Int.self) }
        print(String(format: "projector catch-up: median %.2f s for %d events = %.0f events/s (batch %d); read model counts %d notifications",
                     median, logged, Double(logged) / median, batch, counted))
        await pool.close()
    }

    /// Appends notifications until the log holds `notifications` of them (kept between runs).
    static func fillLog(store: EventStore, pool: ConnectionPool, notifications: Int, progress: ProgressLine) async throws {
        let present = try await pool.withConnection {
            try $0.query("SELECT count(DISTINCT notification_id) FROM events")[0].decode(0, as: Int.self)
        }
        guard present < notifications else { return }
        let chunk = 25_000
        // Notification numbers are dense from 0, so a bigger log extends a smaller one.
        var next = present
        while next < notifications {
            progress.update(next, of: notifications, "notifications in the log")
            let count = min(chunk, notifications - next)
            let items = BenchmarkEvents.notifications(count, startingAt: next)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<2 {
                    group.addTask {
                        for start in stride(from: lane * 1000, to: items.count, by: 2000) {
                            _ = try await store.append(Array(items[start..<min(start + 1000, items.count)]))
                        }
                    }
                }
                try await group.waitForAll()
            }
            next += count
        }
        _ = try await pool.withConnection { try $0.execute("VACUUM ANALYZE events") }
    }

    static func resetReadModel(_ pool: ConnectionPool) async throws {
        try await pool.withConnection { connection in
            try connection.execute("TRUNCATE notification_states, engagement_daily, engagement_actions_daily, extension_telemetry_daily, engagement_devices, engagement_device_moments, engagement_device_pair_moments")
            try connection.execute("DELETE FROM projection_checkpoints")
            try connection.execute("CHECKPOINT")
        }
    }
}
