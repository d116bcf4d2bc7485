import EmbeddedPostgres
import EngageCore
import EventStore
import Foundation
import Postgres
import Runtime

/// `engage bench append`: the event log's append path against `psql \copy` of the same rows.
enum AppendBenchmark {
    static let events = Option("events", value: "n", help: "Events per round.", default: 1_000_000, validate: .range(1_000...50_000_000))
    static let batch = Option("batch", value: "n", help: "Events per append.", default: 1_000, validate: .range(1...100_000))
    static let rounds = Option("rounds", value: "n", help: "Rounds of each method; medians are reported.", default: 3, validate: .range(1...20))
    static let connections = Option("connections", value: "n", help: "Appending connections working in parallel (the server runs two committers).",
                                    default: 2, validate: .range(1...32))

    static let definition = Command(
        name: "append",
        abstract: "Append events in batches through the event store and compare with psql \\copy of the same rows.",
        options: CommonOptions.databaseAndLogging + [events, batch, rounds, connections],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.logger(arguments)
        let events = arguments[Self.events]
        let batchSize = arguments[batch]
        let rounds = arguments[Self.rounds]
        let connections = arguments[Self.connections]

        let setup = try DatabaseSetup.open(arguments, logger: logger, migrate: false)
        defer { setup.close() }
        // A database of its own: the benchmark truncates the log between rounds.
        let benchConfiguration = try BenchCommand.database(named: "engage_bench", beside: setup)

        let items = BenchmarkEvents.make(count: events)
        let copyFile = FileManager.default.temporaryDirectory.appendingPathComponent("engage-bench-\(getpid()).tsv")
        try BenchmarkEvents.copyText(items).write(to: copyFile)
        // Their ids go into event_ids too, in the same transaction, as engage stores them.
        let idsFile = FileManager.default.temporaryDirectory.appendingPathComponent("engage-bench-\(getpid())-ids.tsv")
        try Data(items.map { $0.event.eventID.description + "\n" }.joined().utf8).write(to: idsFile)
        defer {
            try? FileManager.default.removeItem(at: copyFile)
            try? FileManager.default.removeItem(at: idsFile)
        }
        let psql = setup.embedded?.clientProgram("psql") ?? "/usr/bin/psql"

        let pool = ConnectionPool(configuration: benchConfiguration, size: connections)
        let store = EventStore(pool: pool)
        let admin = try Connection(configuration: benchConfiguration)
        defer { admin.close() }
        let rowBytes = try measureRowBytes(items: Array(items.prefix(1000)), admin: admin)

        var appendRates: [Double] = []
        var copyRates: [Double] = []
        let progress = ProgressLine.standardError("bench append")
        for round in 1...rounds {
            progress.update("round \(round)/\(rounds), append")
            try reset(admin)
            let appendSeconds = try await timeAppend(items, batchSize: batchSize, connections: connections, store: store)
            let stored = try admin.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self)
            guard stored == items.count else { throw BenchCommand.BenchError("append stored \(stored) of \(items.count) events") }
            appendRates.append(Double(items.count) / appendSeconds)

            progress.update("round \(round)/\(rounds), psql \\copy")
            try reset(admin)
            let copySeconds = try timePsqlCopy(file: copyFile.path, ids: idsFile.path, psql: psql, configuration: benchConfiguration)
            copyRates.append(Double(items.count) / copySeconds)
            progress.print(String(format: "round %d: append %.0f events/s, psql \\copy %.0f rows/s", round, appendRates.last!, copyRates.last!))
        }
        progress.finish()
        try reset(admin)
        await pool.close()

        let appendMedian = BenchCommand.median(appendRates), copyMedian = BenchCommand.median(copyRates)
        print("""
            events: \(items.count) in batches of \(batchSize), \(connections) appending connection(s), ~\(rowBytes) bytes per row, \(rounds) round(s)
            append (binary COPY into event_ids and events, one commit per batch): median \(Int(appendMedian)) events/s
            psql \\copy into event_ids and events (text, one connection, one transaction): median \(Int(copyMedian)) rows/s
            ratio append / \\copy: \(String(format: "%.2f", appendMedian / copyMedian))
            """)
    }

    static func reset(_ admin: Connection) throws {
        try admin.execute("TRUNCATE events, event_ids")
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

    static func timePsqlCopy(file: String, ids: String, psql: String, configuration: PostgresConfiguration) throws -> Double {
        let stopwatch = Stopwatch()
        let outcome = try ProcessRunner.run([
            psql, configuration.connectionString, "-v", "ON_ERROR_STOP=1", "-q", "-c", "BEGIN",
            "-c", "\\copy event_ids (event_id) FROM '\(ids)'",
            "-c", "\\copy events (event_id, app_id, notification_id, type, category, device_id, occurred_at, experiment_id, experiment_arm, payload) FROM '\(file)'",
            "-c", "COMMIT",
        ])
        let seconds = stopwatch.elapsed.seconds
        guard outcome.status == 0 else { throw BenchCommand.BenchError("psql \\copy failed: \(outcome.output)") }
        return seconds
    }

}
