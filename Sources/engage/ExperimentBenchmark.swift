import EngageCore
import Experiments
import Foundation
import Postgres
import Runtime

/// `engage bench experiment`: an experiment's analysis (replay of its events and statistics)
/// against the database alone reading the same rows, on an existing experiment's log.
enum ExperimentBenchmark {
    static func run(_ arguments: ParsedArguments) async throws {
        var logger = try CommonOptions.logger(arguments)
        logger.level = max(logger.level, .warning)
        let id = try arguments.value("experiment", default: "strategy-full-vs-adaptive")
        let rounds = try arguments.int("rounds", default: 5, in: 1...50)
        let lanes = try arguments.int("lanes", default: 2, in: 1...16)
        let chunkSize = try arguments.int("chunk", default: 5_000, in: 100...1_000_000)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        let pool = ConnectionPool(configuration: setup.configuration, size: lanes)
        do {
            try await measure(id, rounds: rounds, lanes: lanes, chunkSize: chunkSize, pool: pool)
        } catch {
            await pool.close()
            throw error
        }
        await pool.close()
    }

    static func measure(_ id: String, rounds: Int, lanes: Int, chunkSize: Int, pool: ConnectionPool) async throws {
        guard let record = try await ExperimentStore(pool: pool).get(id) else {
            throw ExperimentCommandError(detail: "no experiment \(id) in this database (create it with engage experiment create --file Examples/experiments/strategy-full-vs-adaptive.json, then engage simulate --direct appends its traffic)")
        }
        let definition = record.definition
        let now = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))
        let oneLane = ExperimentRunner(pool: pool, chunkSize: chunkSize, lanes: 1)
        let split = ExperimentRunner(pool: pool, chunkSize: chunkSize, lanes: lanes)

        var databaseTimes: [Double] = [], oneLaneTimes: [Double] = [], splitTimes: [Double] = []
        // engage's own CPU seconds during each analysis: steadier than wall time on a busy machine.
        var oneLaneCPU: [Double] = [], splitCPU: [Double] = []
        var last: ExperimentRunner.Outcome?
        for round in 1...rounds {
            var stopwatch = Stopwatch()
            let rows = try await oneLane.readRowsOnly(definition)
            databaseTimes.append(stopwatch.elapsed.seconds)

            stopwatch = Stopwatch()
            var cpu = processCPUSeconds()
            let single = try await oneLane.analyse(definition, previousRuns: 0, now: now)
            oneLaneTimes.append(stopwatch.elapsed.seconds)
            oneLaneCPU.append(processCPUSeconds() - cpu)

            stopwatch = Stopwatch()
            cpu = processCPUSeconds()
            let outcome = try await split.analyse(definition, previousRuns: 0, now: now)
            splitTimes.append(stopwatch.elapsed.seconds)
            splitCPU.append(processCPUSeconds() - cpu)

            guard outcome.tallies == single.tallies, outcome.events == rows, single.events == rows else {
                throw BenchCommand.BenchError("the replays disagree: \(rows) rows, \(single.events) and \(outcome.events) events replayed")
            }
            last = outcome
            print(String(format: "round %d: database only %.2f s, analysis on 1 connection %.2f s, on %d %.2f s",
                         round, databaseTimes.last!, oneLaneTimes.last!, lanes, splitTimes.last!))
        }
        guard let last else { return }
        let database = BenchCommand.median(databaseTimes)
        let single = BenchCommand.median(oneLaneTimes)
        let parallel = BenchCommand.median(splitTimes)
        print("""
            experiment \(id): \(last.events) events, \(last.notifications) notifications, decision \(last.result.decision.code), \(rounds) round(s), FETCH \(chunkSize)
            database only (replay query, rows fetched and dropped, 1 connection): median \(format(database)) s
            analysis (replay + statistics), 1 connection:                       median \(format(single)) s, \(format(single / database))x the database alone; engage CPU \(format(BenchCommand.median(oneLaneCPU))) s
            analysis (replay + statistics), \(lanes) connections on one snapshot:   median \(format(parallel)) s, \(format(parallel / database))x the database alone; engage CPU \(format(BenchCommand.median(splitCPU))) s
            """)
    }

    /// User and system CPU time of this process so far.
    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}
