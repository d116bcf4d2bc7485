import EngageCore
import EventStore
import Experiments
import Foundation
import LogRetention
import Postgres
import Projections
import Runtime

/// `engage log prune` and `engage log restore`: retention of the event log (docs/retention.md).
enum LogCommand {
    static let olderThan = Option<TimeSpan?>(
        "older-than", value: "age",
        help: "Prune the weeks recorded before the UTC day that began this long ago (e.g. 90d); at least the idempotency window (--max-past-days, --max-future-minutes, plus 12h for a device clock running ahead and 1h).",
        validate: Validation("expected a time span such as 31d, 36h or 30d12h, at most \(TimeSpan(LogPruner.longestOlderThan).optionText) (100 years)") {
            $0.duration <= LogPruner.longestOlderThan
        })
    static let archive = Option<String?>(
        "archive", value: "dir", help: "Archive each pruned day into this directory first (made if missing); engage log restore loads it back.",
        validate: .path)
    static let batch = Option("batch", value: "rows", help: "Ids (or legacy events) removed per transaction; also sizes the archive's read batches.",
                              default: 20_000, validate: .range(100...1_000_000))
    static let pause = Option("pause", value: "ms", help: "A further fixed rest after every batch, leaving the database to ingestion.",
                              default: 0, validate: .range(0...60_000))
    static let pace = Option("pace", value: "percent",
                             help: "Share of the time the prune works (archive reads and id deletions), resting in between: 25 rests 3 s for each 1 s of work; 100 never rests.",
                             default: 25, validate: .range(1...100))
    static let nice = Option("nice", value: "niceness",
                             help: "CPU priority, 0-19, of the prune's own process (archive compression) and of its PostgreSQL backend when the server is on this machine: higher yields more to ingestion.",
                             default: 10, validate: .range(0...19))
    static let dryRun = Flag("dry-run", help: "Show what would be pruned and run the checks, without pruning.")
    static let includeRunningExperiments = Flag(
        "include-running-experiments", help: "Prune events of running experiments too (their analyses then see only what is kept).")
    static let directory = Argument("dir", help: "An archive directory written by engage log prune --archive.")

    static let definition = Command(
        name: "log",
        abstract: "Prune the oldest weeks of the event log into archives, and restore them.",
        subcommands: [
            Command(name: "prune", abstract: "Drop the weeks of the log recorded before a day, archiving their days first with --archive.",
                    options: CommonOptions.databaseAndLogging
                        + [olderThan, archive, ServerOptions.maxPastDays, ServerOptions.maxFutureMinutes, batch, pace, pause, nice],
                    flags: [dryRun, includeRunningExperiments], run: prune),
            Command(name: "restore", abstract: "Load an archive written by engage log prune back into the log; what the log holds is skipped.",
                    options: CommonOptions.databaseAndLogging, arguments: [directory], run: restore),
        ])

    // MARK: prune

    static func prune(_ arguments: ParsedArguments) async throws {
        let olderThan = try arguments.required(Self.olderThan)
        var limits = EventLimits()
        limits.maxPast = .seconds(86_400 * arguments[ServerOptions.maxPastDays])
        limits.maxFuture = .seconds(60 * arguments[ServerOptions.maxFutureMinutes])
        let window = IdempotencyWindow(limits: limits)
        guard olderThan.duration >= window.length else {
            throw arguments.usageError(
                .invalidValue,
                "option '\(Self.olderThan.longName)' \(olderThan.optionText) is inside the idempotency window of \(TimeSpan(window.length)) "
                    + "(\(TimeSpan(window.length).optionText)): \(LogPruner.windowReason(window))")
        }
        var configuration = LogPruner.Configuration(olderThan: olderThan.duration, window: window)
        configuration.batchRows = arguments[batch]
        configuration.pace = DutyCycle(share: Double(arguments[pace]) / 100, pause: .milliseconds(arguments[pause]))
        configuration.backendNiceness = Int32(arguments[nice])
        if let directory = arguments[archive] {
            configuration.archiveDirectory = try archiveDirectory(directory, arguments)
        }
        let includeRunning = arguments[includeRunningExperiments]
        configuration.checks = [projectionsCheck] + (includeRunning ? [] : [experimentsCheck])
        configuration.resetReaders = ExperimentTallyStore.resetEveryExperiment
        let logger = CommonOptions.quietLogger(arguments)
        try await DatabaseSetup.withPool(arguments, size: 2, logger: logger) { pool in
            // Once the database is open: a local PostgreSQL this command starts must not inherit it.
            ProcessPriority.lower(to: Int32(arguments[nice]))
            let pruner = LogPruner(pool: pool, configuration: configuration, logger: logger)
            if arguments[dryRun] {
                printPlan(try await pruner.plan(), archive: configuration.archiveDirectory)
                return
            }
            let line = ProgressLine.standardError("prune")
            let report = try await pruner.run { progress in line.update(progress.events, of: progress.total, "events") }
            line.finish()
            printReport(report, pace: configuration.pace, niceness: Int32(arguments[nice]))
            printTalliesReset(report.readersReset)
        }
    }

    /// The read models must have folded what goes (a projection that never ran starts later from
    /// the oldest event kept).
    static let projectionsCheck: LogPruner.Check = { connection, cut in
        try ProjectionRetention.behind(recordedBefore: cut, on: connection).map { behind in
            behind.isRebuild
                ? "a rebuild of the read model '\(behind.projection.split(separator: ":")[0])' is replaying the log: let it finish, then prune"
                : "the read model '\(behind.projection)' has not folded every event recorded before \(day(cut)) yet (checkpoint \(behind.checkpoint)): "
                    + "let its projector catch up, then prune"
        }
    }

    static let experimentsCheck: LogPruner.Check = { connection, cut in
        let running = try ExperimentRetention.runningExperiments(withEventsRecordedBefore: cut, on: connection)
        guard !running.isEmpty else { return [] }
        return ["running experiment(s) \(running.joined(separator: ", ")) have events recorded before \(day(cut)), which their next "
            + "analysis would no longer see (tagged, or in their CUPED pre-period): stop them first, or prune with --include-running-experiments"]
    }

    /// The directory, made if missing; a usage error if it cannot be.
    static func archiveDirectory(_ path: String, _ arguments: ParsedArguments) throws(UsageError) -> String {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        do {
            try FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true)
        } catch {
            throw arguments.usageError(.invalidValue, "option '\(archive.longName)': cannot make the directory \(path)")
        }
        guard FileManager.default.isWritableFile(atPath: absolute) else {
            throw arguments.usageError(.invalidValue, "option '\(archive.longName)': the directory \(path) is not writable")
        }
        return absolute
    }

    static func printPlan(_ plan: LogPruner.Plan, archive: String?) {
        guard !plan.partitions.isEmpty else {
            print("nothing to prune: no event was recorded before \(day(plan.cut))")
            return
        }
        var table = TextTable([.left, .left, .right, .left])
        table.append(["PARTITION", "RECORDED", "EVENTS (ESTIMATE)", "GOES"])
        for target in plan.partitions {
            let from = target.partition.lower.map(day) ?? "the beginning"
            table.append([target.partition.name, "\(from) to \(day(target.partition.upper))", String(target.estimatedEvents),
                          target.whole ? "whole (dropped)" : "rows before \(day(plan.cut)) (deleted in batches)"])
        }
        print(table.render())
        print("would prune about \(plan.estimatedEvents) events recorded before \(day(plan.cut))"
            + (archive.map { ", archived into \($0)" } ?? ", without an archive"))
    }

    static func printReport(_ report: LogPruner.Report, pace: DutyCycle, niceness: Int32) {
        guard !report.days.isEmpty else {
            print("nothing to prune: no event was recorded before \(day(report.plan.cut))")
            return
        }
        var table = TextTable([.left, .right, .left, .right])
        table.append(["DAY", "EVENTS", "ARCHIVE FILE", "BYTES"])
        for day in report.days {
            table.append([Self.day(day.day), String(day.events), day.archiveFile ?? "-", day.archiveBytes.map { String($0) } ?? "-"])
        }
        print(table.render())
        let rate = report.seconds > 0 ? Double(report.events) / report.seconds : 0
        print("pruned \(report.events) events recorded before \(day(report.plan.cut)) in \(String(format: "%.1f", report.seconds)) s "
            + "(\(Int(rate)) events/s, \(pace.description)\(report.backend.map { "; " + $0.description(niceness: niceness) } ?? ""))")
    }

    // MARK: restore

    static func restore(_ arguments: ParsedArguments) async throws {
        let path = try arguments.required(directory)
        // An empty name would quietly mean the current directory.
        guard !path.isEmpty else { throw arguments.usageError(.invalidValue, "argument '<\(directory.name)>': expected a directory") }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: absolute, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw arguments.usageError(.invalidValue, "argument '<\(directory.name)>': \(path) is not a directory")
        }
        guard FileManager.default.fileExists(atPath: absolute + "/" + LogRestorer.manifestFileName) else {
            throw arguments.usageError(.invalidValue, "argument '<\(directory.name)>': \(path) holds no \(LogRestorer.manifestFileName): "
                + "not an archive written by engage log prune")
        }
        let logger = CommonOptions.quietLogger(arguments)
        try await DatabaseSetup.withPool(arguments, size: 2, logger: logger) { pool in
            var restorer = LogRestorer(pool: pool, directory: absolute, logger: logger)
            restorer.resetReaders = ExperimentTallyStore.resetEveryExperiment
            let line = ProgressLine.standardError("restore")
            let report = try await restorer.run { progress in line.update(progress.events, of: progress.total, "events") }
            line.finish()
            var table = TextTable([.left, .right, .right, .right, .right])
            table.append(["DAY", "IN ARCHIVE", "RESTORED", "ALREADY IN THE LOG", "ID TAKEN BY ANOTHER EVENT"])
            for day in report.days {
                table.append([Self.day(day.day), String(day.inArchive), String(day.restored), String(day.present), String(day.conflicting)])
            }
            print(table.render())
            print("restored \(report.restored) events (\(report.present) already in the log) in "
                + "\(String(format: "%.1f", report.seconds)) s")
            let rebuiltWithout = report.daysToRebuild
            if !rebuiltWithout.isEmpty {
                print("the read model was rebuilt without \(rebuiltWithout.count) of these days after they were pruned: "
                    + "engage projections rebuild counts them again")
            }
            printTalliesReset(report.readersReset)
        }
    }

    // MARK: Output

    /// Incremental experiment tallies cannot see events leave the log or come back with their old
    /// transaction ids: they are dropped, and each experiment's next look folds the log again.
    static func printTalliesReset(_ experiments: Int) {
        guard experiments > 0 else { return }
        print("dropped the incremental tallies of \(experiments) experiment(s): their next look folds the log as it is now")
    }

    static func day(_ time: Timestamp) -> String { String(time.rfc3339.prefix(10)) }

}
