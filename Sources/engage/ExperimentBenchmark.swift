import EngageCore
import Experiments
import Foundation
import Postgres
import Runtime

/// `engage bench experiment`: an experiment's analysis (replay of its events and statistics)
/// against the database alone reading the same rows, on an existing experiment's log.
enum ExperimentBenchmark {
    static let experiment = Option("experiment", value: "id", help: "The experiment analysed (its events must be in the database).",
                                   default: "strategy-full-vs-adaptive")
    static let rounds = Option("rounds", value: "n", help: "Rounds of each measurement; medians are reported.", default: 5, validate: .range(1...50))
    static let lanes = Option("lanes", value: "n", help: "Connections the split replay reads on.", default: 2, validate: .range(1...16))
    static let chunk = Option("chunk", value: "n", help: "Rows per FETCH.", default: 5_000, validate: .range(100...1_000_000))
    static let cuped = Option("cuped", value: "days", help: "CUPED's pre-period in days, or off (default: as the definition says). Without a start_at, the experiment starts at its first event.",
                              default: "definition")
    static let incremental = Flag("incremental", help: "Also time incremental looks: the first fold of the whole experiment into its tallies, then looks with the tallies current.")

    static let definition = Command(
        name: "experiment",
        abstract: "Measure an experiment's analysis against the database alone reading the same rows.",
        options: CommonOptions.databaseAndLogging + [experiment, rounds, lanes, chunk, cuped],
        flags: [incremental],
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let lanes = arguments[Self.lanes]
        let days: Int??
        switch arguments[cuped] {
        case "definition": days = .none
        case "off": days = .some(nil)
        case let text:
            guard let value = Int(text), (1...ExperimentAnalysisSettings.maximumCupedPrePeriodDays).contains(value) else {
                throw arguments.usageError(.invalidValue, "--cuped must be off or a number of days from 1 to \(ExperimentAnalysisSettings.maximumCupedPrePeriodDays)")
            }
            days = .some(value)
        }
        try await DatabaseSetup.withPool(arguments, size: lanes, logger: CommonOptions.quietLogger(arguments)) { pool in
            try await measure(arguments[experiment], rounds: arguments[rounds], lanes: lanes, chunkSize: arguments[chunk],
                              cupedDays: days, incremental: arguments[incremental], pool: pool)
        }
    }

    /// `cupedDays`: nil to analyse as the definition says; `.some(nil)` for CUPED off.
    static func measure(_ id: String, rounds: Int, lanes: Int, chunkSize: Int, cupedDays: Int?? = nil,
                        incremental: Bool = false, pool: ConnectionPool) async throws {
        guard let record = try await ExperimentStore(pool: pool).get(id) else {
            throw ExperimentCommandError(detail: "no experiment \(id) in this database (create it with engage experiment create --file Examples/experiments/strategy-full-vs-adaptive.json, then engage simulate --direct appends its traffic)")
        }
        var definition = record.definition
        if let days = cupedDays {
            definition.analysis.cupedPrePeriodDays = days
            if days != nil, definition.startAt == nil {
                definition.startAt = try await firstEvent(of: definition, pool: pool)
            }
        }
        let now = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))
        let oneLane = ExperimentRunner(pool: pool, chunkSize: chunkSize, lanes: 1)
        let split = ExperimentRunner(pool: pool, chunkSize: chunkSize, lanes: lanes)

        var databaseTimes: [Double] = [], oneLaneTimes: [Double] = [], splitTimes: [Double] = []
        // engage's own CPU seconds during each analysis: steadier than wall time on a busy machine.
        var oneLaneCPU: [Double] = [], splitCPU: [Double] = []
        var last: ExperimentRunner.Outcome?
        let progress = ProgressLine.standardError("bench experiment")
        for round in 1...rounds {
            progress.update("round \(round)/\(rounds)")
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
            progress.print(String(format: "round %d: database only %.2f s, analysis on 1 connection %.2f s, on %d %.2f s",
                                  round, databaseTimes.last!, oneLaneTimes.last!, lanes, splitTimes.last!))
        }
        progress.finish()
        guard let last else { return }
        let looks = incremental ? try await measureLooks(definition, rounds: rounds, runner: oneLane, replayed: last, now: now) : nil
        let database = BenchCommand.median(databaseTimes)
        let single = BenchCommand.median(oneLaneTimes)
        let parallel = BenchCommand.median(splitTimes)
        print("""
            experiment \(id): \(last.events) events, \(last.notifications) notifications, decision \(last.result.decision.code), \(rounds) round(s), FETCH \(chunkSize)
            \(cupedLine(last.result))
            database only (replay query, rows fetched and dropped, 1 connection): median \(format(database)) s
            analysis (replay + statistics), 1 replay connection (+1 for CUPED):  median \(format(single)) s, \(format(single / database))x the database alone; engage CPU \(format(BenchCommand.median(oneLaneCPU))) s
            analysis (replay + statistics), \(lanes) connections on one snapshot:   median \(format(parallel)) s, \(format(parallel / database))x the database alone; engage CPU \(format(BenchCommand.median(splitCPU))) s
            """)
        if let looks {
            print("""
                incremental: first fold of the whole experiment into its tallies (and analysis): \(format(looks.first)) s, \(format(looks.first / parallel))x the full replay
                incremental look, tallies current (fold of nothing new, tallies read, analysis): median \(format(looks.current)) s, \(format(looks.current / parallel))x the full replay; equal to the replay
                """)
        }
    }

    /// Times `ExperimentRunner.look`: the tallies are dropped, folded from the whole log once, and
    /// then looked at `rounds` times with nothing new; every result must equal the replay's.
    static func measureLooks(_ definition: ExperimentDefinition, rounds: Int, runner: ExperimentRunner,
                             replayed: ExperimentRunner.Outcome, now: Timestamp) async throws -> (first: Double, current: Double) {
        try await ExperimentTallyStore.reset(experimentID: definition.id, pool: runner.pool)
        let progress = ProgressLine.standardError("bench experiment")
        progress.update("incremental: first fold")
        var stopwatch = Stopwatch()
        var outcome = try await runner.look(definition, previousRuns: 0, now: now)
        let first = stopwatch.elapsed.seconds
        var times: [Double] = []
        for round in 1...rounds {
            guard outcome.tallies == replayed.tallies, outcome.events == replayed.events, outcome.result == replayed.result else {
                throw BenchCommand.BenchError("the incremental look disagrees with the replay: \(outcome.events) events against \(replayed.events)")
            }
            progress.update("incremental look \(round)/\(rounds)")
            stopwatch = Stopwatch()
            outcome = try await runner.look(definition, previousRuns: 0, now: now)
            times.append(stopwatch.elapsed.seconds)
            progress.print(String(format: "incremental look %d: %.2f s", round, times.last!))
        }
        progress.finish()
        return (first, BenchCommand.median(times))
    }

    /// When the experiment's first event occurred: its start for a definition without one.
    static func firstEvent(of definition: ExperimentDefinition, pool: ConnectionPool) async throws -> Timestamp? {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT min(occurred_at) FROM events WHERE app_id = \(definition.appID) AND experiment_id = \(definition.id)
                """)[0].decode(0, as: PostgresTimestamp?.self).map { Timestamp(microsecondsSinceEpoch: $0.unixMicroseconds) }
        }
    }

    static func cupedLine(_ result: ExperimentRunResult) -> String {
        guard let window = result.cupedWindow else { return "CUPED off (the analysis times include no pre-period read)" }
        let reductions = result.comparisons.compactMap { comparison in
            comparison.metrics.first?.cuped?.varianceReduction.map { "\(comparison.arm) \(format($0 * 100))%" }
        }
        return "CUPED on: pre-period \(window.days) days before \(window.to.rfc3339), \(window.devicesWithHistory) devices with history, "
            + "primary variance reduction " + (reductions.isEmpty ? "none" : reductions.joined(separator: ", "))
            + " (the analysis times include the pre-period read)"
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
