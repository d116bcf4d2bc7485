import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Runtime

/// `engage bench report`: report latency as the log grows, to show it depends on the read
/// model's size (buckets), not on the number of events.
enum ReportBenchmark {
    static let sizes = Option<[Int]>(
        "sizes", value: "list", help: "Comma-separated log sizes in events.", default: [1_000_000, 10_000_000], defaultText: "1000000,10000000",
        requirement: "expected sizes from 4000 to 100000000 events, such as 1000000,10000000",
        parse: { text in
            // Every entry must read: one that does not is a typing slip, not a size to skip.
            let entries = text.split(separator: ",", omittingEmptySubsequences: false)
            let sizes = entries.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return !sizes.isEmpty && sizes.count == entries.count && sizes.allSatisfy { (4_000...100_000_000).contains($0) } ? sizes : nil
        })
    static let repeats = Option("repeats", value: "n", help: "Report queries per size; the median is reported.", default: 21, validate: .range(1...1000))

    static let definition = Command(
        name: "report",
        abstract: "Measure engage report latency on logs of growing size (the projector catches up in between).",
        options: CommonOptions.databaseAndLogging + [sizes, repeats],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.quietLogger(arguments)
        let repeats = arguments[Self.repeats]
        let sizes = arguments[Self.sizes]
        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: false)
        defer { setup.close() }
        var lines: [String] = []
        let progress = ProgressLine.standardError("bench report")
        for size in sizes.sorted() {
            // A database per size, kept between runs (filling 10M events takes minutes).
            let name = "engage_bench_report_\(size)"
            let configuration = try BenchCommand.database(named: name, beside: setup)
            let pool = ConnectionPool(configuration: configuration, size: 4)
            let store = EventStore(pool: pool)
            var configurationOfProjector = Projector.Configuration()
            configurationOfProjector.pollInterval = .milliseconds(50)
            let projector = Projector(pool: pool, configuration: configurationOfProjector, logger: logger,
                                      metrics: ProjectorMetrics(registry: MetricsRegistry()))
            let projecting = Task { try await projector.run() }
            let fill = Stopwatch()
            try await ProjectorBenchmark.fillLog(store: store, pool: pool, notifications: size / 4, progress: progress)
            let filled = fill.elapsed.seconds
            let catchUp = Stopwatch()
            let logged = try await pool.withConnection { try $0.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self) }
            while try await pool.withConnection({ connection in
                try connection.query("SELECT coalesce(max(events_processed), 0) FROM projection_checkpoints WHERE projection = 'engagement'")[0].decode(0, as: Int.self)
            }) < logged {
                progress.update("log of \(ProgressLine.grouped(logged)) events, projector catching up")
                try await Task.sleep(for: .milliseconds(100))
            }
            let caughtUp = catchUp.elapsed.seconds
            let buckets = try await pool.withConnection { try $0.query("SELECT count(*) FROM engagement_daily")[0].decode(0, as: Int.self) }
            // The same work as `engage report`: one connection, the query, every format's input.
            let connection = try Connection(configuration: configuration)
            let devices = try await pool.withConnection { try $0.query("SELECT count(*) FROM engagement_devices")[0].decode(0, as: Int.self) }
            var times: [Double] = []
            var unit = InferenceUnit.notification
            for _ in 0..<repeats {
                let stopwatch = Stopwatch()
                let report = try ReportQuery().run(on: connection, now: SystemTime().wallClock)
                _ = report.renderTable()
                times.append(stopwatch.elapsed.seconds * 1000)
                unit = report.stratified.first?.unit ?? .notification
            }
            connection.close()
            let sorted = times.sorted()
            let line = String(format: "log %d events (%d buckets, %d device rows not read, unit %@): report median %.1f ms, p90 %.1f ms (fill %.0f s, projector catch-up %.0f s)",
                              logged, buckets, devices, unit.rawValue, sorted[sorted.count / 2], sorted[min(sorted.count - 1, sorted.count * 9 / 10)], filled, caughtUp)
            progress.print(line)
            lines.append(line)
            projecting.cancel()
            _ = try? await projecting.value
            await pool.close()
        }
        progress.finish()
    }
}
