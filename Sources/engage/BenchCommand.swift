import EmbeddedPostgres
import EngageCore
import EventStore
import Foundation
import Postgres
import Runtime

/// `engage bench append`: the event log's append path against `psql \copy` of the same rows;
/// the other benchmarks live in files of their own.
enum BenchCommand: EngageCommand {
    static let definition = Command(
        name: "bench",
        abstract: "Measure engage's hot paths on this machine.",
        subcommands: [
            Command(
                name: "append",
                abstract: "Append events in batches through the event store and compare with psql \\copy of the same rows.",
                options: CommonOptions.database + CommonOptions.logging + [
                    .init("events", value: "n", help: "Events per round.", default: "1000000"),
                    .init("batch", value: "n", help: "Events per append.", default: "1000"),
                    .init("rounds", value: "n", help: "Rounds of each method; medians are reported.", default: "3"),
                    .init("connections", value: "n", help: "Appending connections working in parallel (the server runs two committers).", default: "2"),
                ]),
            Command(
                name: "ingest",
                abstract: "Send generated events to a running server's POST /v1/events and print what was accepted and how fast (Benchmarks/ingest.sh uses it).",
                options: IngestLoadBenchmark.options),
            Command(
                name: "project",
                abstract: "Measure the projector catching up from an empty read model over a log of N events (four per notification).",
                options: CommonOptions.database + CommonOptions.logging + [
                    .init("events", value: "n", help: "Events in the log (four per notification).", default: "1000000"),
                    .init("rounds", value: "n", help: "Catch-ups measured; medians are reported.", default: "3"),
                    .init("batch", value: "n", help: "Events per projector batch.", default: "20000"),
                ]),
            Command(
                name: "pipeline",
                abstract: "Measure how many deliveries per second the extension model replays on one core.",
                options: [.init("deliveries", value: "n", help: "Deliveries per round.", default: "5000000"),
                          .init("rounds", value: "n", help: "Rounds; the median is reported.", default: "5")]),
            Command(
                name: "replay",
                abstract: "Measure how many logged deliveries per second a strategy replay processes on one core (simulated, in memory).",
                options: [.init("notifications", value: "n", help: "Simulated notifications.", default: "1000000"),
                          .init("devices", value: "n", help: "Devices they go to.", default: "100000"),
                          .init("rounds", value: "n", help: "Rounds; the median is reported.", default: "3")]),
            Command(
                name: "decode",
                abstract: "Measure the request decoder against Foundation's JSON decoders on the same bodies.",
                options: [.init("rounds", value: "n", help: "Rounds; medians are reported.", default: "5")]),
            Command(
                name: "report",
                abstract: "Measure engage report latency on logs of growing size (the projector catches up in between).",
                options: CommonOptions.database + CommonOptions.logging + [
                    .init("sizes", value: "list", help: "Comma-separated log sizes in events.", default: "1000000,10000000"),
                    .init("repeats", value: "n", help: "Report queries per size; the median is reported.", default: "21"),
                ]),
            Command(
                name: "experiment",
                abstract: "Measure an experiment's analysis against the database alone reading the same rows.",
                options: CommonOptions.database + CommonOptions.logging + [
                    .init("experiment", value: "id", help: "The experiment analysed (its events must be in the database).", default: "strategy-full-vs-adaptive"),
                    .init("rounds", value: "n", help: "Rounds of each measurement; medians are reported.", default: "5"),
                    .init("lanes", value: "n", help: "Connections the split replay reads on.", default: "2"),
                    .init("chunk", value: "n", help: "Rows per FETCH.", default: "5000"),
                ]),
        ])

    static func run(_ arguments: ParsedArguments) async throws {
        if arguments.commandPath.last == "project" {
            try await ProjectorBenchmark.run(arguments)
            return
        }
        if arguments.commandPath.last == "ingest" {
            try await IngestLoadBenchmark.run(arguments)
            return
        }
        if arguments.commandPath.last == "pipeline" {
            try PipelineBenchmark.run(arguments)
            return
        }
        if arguments.commandPath.last == "replay" {
            try ReplayBenchmark.run(arguments)
            return
        }
        if arguments.commandPath.last == "decode" {
            try DecodeBenchmark.run(arguments)
            return
        }
        if arguments.commandPath.last == "experiment" {
            try await ExperimentBenchmark.run(arguments)
            return
        }
        if arguments.commandPath.last == "report" {
            try await ReportBenchmark.run(arguments)
            return
        }
        let logger = try CommonOptions.logger(arguments)
        let events = try arguments.int("events", default: 1_000_000, in: 1_000...50_000_000)
        let batchSize = try arguments.int("batch", default: 1_000, in: 1...100_000)
        let rounds = try arguments.int("rounds", default: 3, in: 1...20)
        let connections = try arguments.int("connections", default: 2, in: 1...32)

        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: false)
        defer { setup.close() }
        // A database of its own: the benchmark truncates the log between rounds.
        let benchConfiguration = setup.configuration.withDatabase("engage_bench")
        try createDatabase(named: "engage_bench", using: setup.configuration)
        try DatabaseSetup(configuration: benchConfiguration, embedded: nil, startedHere: false, logger: logger).migrate()

        let items = BenchmarkEvents.make(count: events)
        let copyFile = FileManager.default.temporaryDirectory.appendingPathComponent("engage-bench-\(getpid()).tsv")
        try BenchmarkEvents.copyText(items).write(to: copyFile)
        defer { try? FileManager.default.removeItem(at: copyFile) }
        let psql = setup.embedded?.clientProgram("psql") ?? "/usr/bin/psql"

        let pool = ConnectionPool(configuration: benchConfiguration, size: connections)
        let store = EventStore(pool: pool)
        let admin = try Connection(configuration: benchConfiguration)
        defer { admin.close() }
        let rowBytes = try measureRowBytes(items: Array(items.prefix(1000)), admin: admin)

        var appendRates: [Double] = []
        var copyRates: [Double] = []
        for round in 1...rounds {
            try reset(admin)
            let appendSeconds = try await timeAppend(items, batchSize: batchSize, connections: connections, store: store)
            let stored = try admin.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self)
            guard stored == items.count else { throw BenchError("append stored \(stored) of \(items.count) events") }
            appendRates.append(Double(items.count) / appendSeconds)

            try reset(admin)
            let copySeconds = try timePsqlCopy(file: copyFile.path, psql: psql, configuration: benchConfiguration)
            copyRates.append(Double(items.count) / copySeconds)
            print(String(format: "round %d: append %.0f events/s, psql \\copy %.0f rows/s", round, appendRates.last!, copyRates.last!))
        }
        try reset(admin)
        await pool.close()

        let appendMedian = median(appendRates), copyMedian = median(copyRates)
        print("""
            events: \(items.count) in batches of \(batchSize), \(connections) appending connection(s), ~\(rowBytes) bytes per row, \(rounds) round(s)
            append (binary COPY into events, one commit per batch): median \(Int(appendMedian)) events/s
            psql \\copy into events (text, one connection):        median \(Int(copyMedian)) rows/s
            ratio append / \\copy: \(String(format: "%.2f", appendMedian / copyMedian))
            """)
    }

    static func createDatabase(named name: String, using configuration: PostgresConfiguration) throws {
        let connection = try Connection(configuration: configuration)
        defer { connection.close() }
        if try connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)").isEmpty {
            try connection.execute("CREATE DATABASE \(identifier: name)")
        }
    }

    static func reset(_ admin: Connection) throws {
        try admin.execute("TRUNCATE events")
        try admin.execute("VACUUM ANALYZE events")
        try admin.execute("CHECKPOINT")
    }

    static func measureRowBytes(items: [AppendItem], admin: Connection) throws -> Int {
        try reset(admin)
        _ = try EventStore.append(items, on: admin)
        return try admin.query("SELECT avg(pg_column_size(e.*))::int8 FROM events e")[0].decode(0, as: Int.self)
    }

    static func timeAppend(_ items: [AppendItem], batchSize: Int, connections: Int, store: EventStore) async throws -> Double {
        let batches = stride(from: 0, to: items.count, by: batchSize).map { Array(items[$0..<min($0 + batchSize, items.count)]) }
        let stopwatch = Stopwatch()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<connections {
                group.addTask {
                    // Each lane encodes its next batch while the current one is being stored, as the
                    // server does with concurrent requests.
                    let indices = Array(stride(from: lane, to: batches.count, by: connections))
                    guard let first = indices.first else { return }
                    var prepared = PreparedBatch(batches[first])
                    for (position, _) in indices.enumerated() {
                        let current = prepared
                        async let stored = store.append([current])
                        let following = position + 1 < indices.count ? PreparedBatch(batches[indices[position + 1]]) : nil
                        _ = try await stored
                        guard let following else { break }
                        prepared = following
                    }
                }
            }
            try await group.waitForAll()
        }
        return stopwatch.elapsed.seconds
    }

    static func timePsqlCopy(file: String, psql: String, configuration: PostgresConfiguration) throws -> Double {
        let stopwatch = Stopwatch()
        let outcome = try ProcessRunner.run([
            psql, configuration.connectionString, "-v", "ON_ERROR_STOP=1", "-q", "-c",
            "\\copy events (event_id, app_id, notification_id, type, category, device_id, occurred_at, experiment_id, experiment_arm, payload) FROM '\(file)'",
        ])
        let seconds = stopwatch.elapsed.seconds
        guard outcome.status == 0 else { throw BenchError("psql \\copy failed: \(outcome.output)") }
        return seconds
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    struct BenchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
