import EngageCore
import Experiments
import Foundation
import Postgres
import Projections
import Runtime

/// `engage experiment create|list|show|start|stop|run|runs|simulate`.
enum ExperimentCommand {
    static let id = Argument("id", help: "The experiment id.")
    static let file = Option<String?>("file", value: "path", help: "The definition as JSON ('-' for standard input).")
    static let app = Option<String?>("app", value: "id", help: "Only this app's experiments.", validate: CommonOptions.appID)
    static let format = Option("format", value: "text|json", help: "text, or the definition as JSON.", default: ShowFormat.text)
    static let limit = Option("limit", value: "n", help: "Most runs listed.", default: 50, validate: .range(1...10_000))
    static let common = CommonOptions.databaseAndLogging
    /// As `engage serve`'s (the same variable and bounds, so one setting covers both), with help
    /// of its own: the server's speaks of requests and group commits.
    static let commitTimeout = ServerOptions.commitTimeout.helping(
        "Time the experiment's change may take (a primary waiting for a lost standby) before the command gives up: exit status 75 "
            + "when nothing was changed (retry), exit status 3 when the change was made on the primary but not confirmed on the "
            + "synchronous standbys (read it back with engage experiment show before repeating it).")
    /// As `engage serve`'s (the same variable, so one setting covers both): a change is
    /// acknowledged only once that many synchronous standbys have it. Its own help: the server's
    /// speaks of events and ingestion.
    static let standbys = Option(
        "synchronous-standbys", value: "n",
        help: "Synchronous standbys that must have the commit before the experiment's change is acknowledged, even when the "
            + "primary's synchronous_standby_names asks for fewer; without them the change is made on the primary but the command "
            + "fails with exit status 3: read the experiment back (engage experiment show) before repeating it. As engage serve's (docs/high-availability.md).",
        environment: ServerOptions.synchronousStandbys.environment, default: ServerOptions.synchronousStandbys.defaultValue,
        validate: .range(PostgresConfiguration.acceptedSynchronousStandbys))

    static let definition = Command(
        name: "experiment",
        abstract: "Create, start, stop and analyse A/B experiments of attachment strategies.",
        subcommands: [
            Command(name: "create", abstract: "Create a draft experiment from a JSON definition.",
                    options: common + [file, standbys, commitTimeout], run: create),
            Command(name: "list", abstract: "List experiments, newest first.", options: common + [app], run: list),
            Command(name: "show", abstract: "Print an experiment: definition, latest decision and lifecycle from the log.",
                    options: common + [format], arguments: [id], run: show),
            Command(name: "start", abstract: "Start a draft experiment; its schedule begins now.",
                    options: common + [standbys, commitTimeout], arguments: [id], run: start),
            Command(name: "stop", abstract: "Stop an experiment; no further runs are scheduled.",
                    options: common + [standbys, commitTimeout], arguments: [id], run: stop),
            Command(name: "run", abstract: "Analyse an experiment now and print the result as JSON.", options: common + ReadOptions.all,
                    arguments: [id], run: run),
            Command(name: "runs", abstract: "List an experiment's analysis runs, newest first.",
                    options: common + [limit], arguments: [id], run: runs),
            ExperimentSimulate.definition(common: common),
        ])

    /// The id argument, refused before any connection when no experiment can have it: the
    /// store finds none for it (`ExperimentDefinition.isValidID`), so it is a typing slip.
    static func requiredID(_ arguments: ParsedArguments) throws(UsageError) -> String {
        let value = try arguments.required(id)
        guard ExperimentDefinition.isValidID(value) else {
            throw arguments.usageError(.invalidValue, "argument '<\(id.name)>': no experiment has this id (an id is lowercase "
                + "letters and digits, separated by single - or _, at most 100 bytes)")
        }
        return value
    }

    static func create(_ arguments: ParsedArguments) async throws {
        let path = try arguments.required(file)
        let bytes: [UInt8]
        if path == "-" {
            bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
        } else {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw arguments.usageError(.invalidValue, "cannot read '\(path)' for option '\(file.longName)'")
            }
            bytes = Array(data)
        }
        // Checked before any database is opened (or a local one started): a malformed file is
        // said as such, whatever the database's state.
        let definition: ExperimentDefinition
        do {
            definition = try ExperimentDefinition(json: bytes)
        } catch {
            throw ExperimentCommandError.invalidDefinition([error])
        }
        let problems = ExperimentStore.creationProblems(definition)
        guard problems.isEmpty else {
            throw ExperimentCommandError.invalidDefinition(problems)
        }
        let record = try await withChangingStore(arguments, changing: nil) { store in try await store.create(definition) }
        print("created experiment \(record.id) (draft); start it with: engage experiment start \(record.id)")
    }

    static func list(_ arguments: ParsedArguments) async throws {
        let listing = try await withStore(arguments) { store, _ in try await store.list(app: arguments[app]) }
        var table = TextTable(header: ["ID", "APP", "STATUS", "SCHEDULE", "ARMS", "STARTED"])
        for record in listing.records {
            table.append([record.id, record.definition.appID, record.status.rawValue, record.definition.schedule.expression,
                          record.definition.arms.map { "\($0.name):\($0.strategy.rawValue)" }.joined(separator: ","),
                          record.definition.startAt?.rfc3339 ?? "-"])
        }
        print(table.render())
        for id in listing.unreadable {
            FileHandle.standardError.write(Data("note: experiment \(id): its stored definition cannot be read by this engage (engage experiment show \(id) says why)\n".utf8))
        }
    }

    static func show(_ arguments: ParsedArguments) async throws {
        let id = try requiredID(arguments)
        let text = try await withStore(arguments) { store, _ in
            guard let record = try await store.get(id) else { throw ExperimentStoreError(code: .notFound, experimentID: id, detail: "no experiment \(id)") }
            if arguments[format] == .json {
                return String(decoding: record.definition.canonicalJSON, as: UTF8.self)
            }
            let lifecycle = try await store.history(of: record.definition).filter { $0.action != .analysed }.map {
                ExperimentSummaryText.LifecycleLine(action: $0.action.rawValue, at: $0.occurredAt, payload: $0.payload)
            }
            let latest = try await store.runs(id, limit: 1, analysedOnly: true).first.map {
                ExperimentSummaryText.LatestRun(runID: $0.id, scheduledFor: $0.scheduledFor, decisionCode: $0.decision ?? "-", result: $0.result)
            }
            return ExperimentSummaryText(definition: record.definition, latestRun: latest, lifecycle: lifecycle).render()
        }
        print(text)
    }

    static func start(_ arguments: ParsedArguments) async throws {
        let id = try requiredID(arguments)
        let record = try await withChangingStore(arguments, changing: id) { store in try await store.start(id) }
        print("started \(record.id) at \(record.definition.startAt?.rfc3339 ?? "-"); schedule \(record.definition.schedule.expression)")
    }

    static func stop(_ arguments: ParsedArguments) async throws {
        let id = try requiredID(arguments)
        let record = try await withChangingStore(arguments, changing: id) { store in try await store.stop(id) }
        print("stopped \(record.id)")
    }

    static func run(_ arguments: ParsedArguments) async throws {
        let id = try requiredID(arguments)
        let logger = CommonOptions.quietLogger(arguments)
        // As engage scheduler's: the analysis holds up to three, the lease renewal needs a fourth.
        let run = try await withStore(arguments, connections: 4) { _, pool in
            var configuration = Scheduler.Configuration()
            let failpoints = Failpoints.fromEnvironment()
            configuration.failpoint = { try failpoints.hit($0) }
            return try await ReadOptions.withReads(arguments, primary: pool, size: 2, logger: logger) { reads in
                try await Scheduler(pool: pool, reads: reads, configuration: configuration, logger: logger).runNow(experimentID: id)
            }
        }
        guard let result = run.result else {
            throw ExperimentCommandError(detail: "run \(run.id) is \(run.status.rawValue): \(run.error ?? "no result")")
        }
        print(String(decoding: result, as: UTF8.self))
    }

    static func runs(_ arguments: ParsedArguments) async throws {
        let id = try requiredID(arguments)
        let runs = try await withStore(arguments) { store, _ in try await store.runs(id, limit: arguments[limit]) }
        var table = TextTable(header: ["RUN", "SCHEDULED FOR", "TRIGGER", "STATUS", "ATTEMPTS", "FINISHED", "DECISION", "ERROR"])
        for run in runs {
            table.append([String(run.id), run.scheduledFor.rfc3339, run.isManual ? "manual" : "schedule", run.status.rawValue,
                          String(run.attempts), run.finishedAt?.rfc3339 ?? "-", run.decision ?? "-", run.error ?? ""])
        }
        print(table.render())
    }

    /// `body`, a create, start or stop (of experiment `changing`, nil for a create), on the store
    /// of the command's database with the command's `--synchronous-standbys` and
    /// `--commit-timeout`. A change made on the primary but not confirmed on the synchronous
    /// standbys fails the command saying it was made (exit status 3), as the API and the console
    /// do, since a repeat finds it made; one past the timeout before its COMMIT was sent fails
    /// saying nothing changed (exit status 75: retry).
    private static func withChangingStore<T: Sendable>(_ arguments: ParsedArguments, changing: String?,
                                                       _ body: (ExperimentStore) async throws -> T) async throws -> T {
        let limit = Duration.seconds(arguments[commitTimeout])
        do {
            return try await withStore(arguments, standbys: arguments[standbys], commitTimeout: limit) { store, _ in try await body(store) }
        } catch let error as PostgresError where error.kind == .unconfirmedCommit {
            throw ExperimentCommandError(
                detail: "the change was made on the primary but not confirmed on the synchronous standbys (" + error.description
                    + "); a failover now could undo it: check it with engage experiment show " + (changing ?? "<id>")
                    + " before repeating the command (a repeated create finds it existing, a repeated start running)",
                exitStatus: ExperimentCommandError.madeUnconfirmed)
        } catch let error as DatabaseDidNotAnswer {
            throw ExperimentCommandError(detail: "nothing was changed: \(error) (--commit-timeout); run the command again",
                                         exitStatus: ExperimentCommandError.nothingChanged)
        }
    }

    /// Runs `body` on the experiment store of the command's database (its changes bounded by
    /// `commitTimeout`); a store's refusal becomes an `ExperimentCommandError`. The migration
    /// run before it commits nothing that waits for a synchronous standby on a migrated database
    /// (`Migrator` replaces the views with the primary's own commit), so on a primary waiting for
    /// one it lost the command reaches its bounded change, and `engage experiment show` answers.
    private static func withStore<T: Sendable>(_ arguments: ParsedArguments, connections: Int = 2, standbys: Int = 0,
                                               commitTimeout: Duration? = nil,
                                               _ body: (ExperimentStore, ConnectionPool) async throws -> T) async throws -> T {
        do {
            return try await DatabaseSetup.withPool(arguments, size: connections, logger: CommonOptions.quietLogger(arguments),
                                                    requiredSynchronousStandbys: standbys) { pool in
                try await body(ExperimentStore(pool: pool, commitTimeout: commitTimeout), pool)
            }
        } catch let error as ExperimentStoreError {
            switch error.code {
            case .invalidDefinition:
                throw ExperimentCommandError.invalidDefinition(error.problems)
            default:
                throw ExperimentCommandError(detail: error.description)
            }
        }
    }
}

/// What `engage experiment show` prints.
enum ShowFormat: String, CaseIterable, OptionValue {
    case text, json
}

/// A refused experiment command: printed as `error: <detail>`, exit status 1 unless it says
/// otherwise (a change made but unconfirmed, or not made within the commit timeout).
struct ExperimentCommandError: Error, CustomStringConvertible {
    var detail: String
    var exitStatus: Int32 = 1
    var description: String { detail }

    /// A definition refused, a problem a line.
    static func invalidDefinition(_ problems: [ExperimentProblem]) -> ExperimentCommandError {
        ExperimentCommandError(detail: "the definition is invalid:\n" + problems.map { "  \($0.field): \($0.problem)" }.joined(separator: "\n"))
    }

    /// The change was made on the primary but not confirmed on the synchronous standbys: read it
    /// back before repeating it.
    static let madeUnconfirmed: Int32 = 3
    /// Nothing was changed (the database did not answer before the COMMIT was sent): run it again.
    /// EX_TEMPFAIL of sysexits.h.
    static let nothingChanged: Int32 = 75
}
