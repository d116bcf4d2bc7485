import EngageCore
import EventStore
import Experiments
import Foundation
import Postgres
import Testing
import TestSupport

/// `engage log prune` and `engage log restore` as an operator runs them, on a database holding
/// days recorded in the past, and what `engage projections rebuild` says in between.
@Suite("engage log")
struct LogCommandTests {
    static func events(_ count: Int, tag: String, experiment: ExperimentTag? = nil) -> [AppendItem] {
        (0..<count).map { n in
            var event = Event(eventID: EventID(UUID()), notificationID: "\(tag)-\(n)", deviceID: "device-\(n)", category: "new_photo",
                              occurredAt: Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000)),
                              details: .displayed(DisplayedDetails(presentation: .plain, attachmentKind: .noAttachment)))
            event.experiment = experiment
            return AppendItem(appID: "app-1", event: event)
        }
    }

    @Test(.timeLimit(.minutes(4)))
    func pruneThenRebuildThenRestoreAsAnOperatorSeesThem() async throws {
        let workspace = try FaultWorkspace("log")
        defer { workspace.remove() }
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        defer { Task { await pool.close() } }
        let old = Self.events(20, tag: "old", experiment: ExperimentTag(id: "exp-old", arm: "control"))
        _ = try await EventStore(pool: pool).append(old + Self.events(5, tag: "new"))
        try await RecordedInThePast.move(old.map(\.event.eventID), daysAgo: 45, pool: pool)
        let experiments = ExperimentStore(pool: pool)
        _ = try await experiments.create(ExperimentDefinition(
            id: "exp-old", appID: "app-1",
            arms: [ExperimentArmDefinition(name: "control", strategy: .full, weight: 0.5, isControl: true),
                   ExperimentArmDefinition(name: "treatment", strategy: .adaptive, weight: 0.5)],
            primaryMetric: .open, guardrails: [], schedule: try CronSchedule("0 * * * *")))
        _ = try await experiments.start("exp-old")
        let environment = ["ENGAGE_DATABASE_URL": database.connectionString, "ENGAGE_LOG_LEVEL": "error"]
        func engage(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            try await CommandLineOptionsTests.engage(arguments, environment: environment, in: workspace)
        }
        let archive = workspace.file("archive")
        let (day, monday) = try await pool.withConnection { connection in
            let row = try connection.query("""
                SELECT to_char((now() AT TIME ZONE 'UTC')::date - 45, 'YYYY-MM-DD'),
                       to_char(date_trunc('week', (now() AT TIME ZONE 'UTC')::date - 45), 'YYYY_MM_DD')
                """)[0]
            return (try row.decode(0, as: String.self), try row.decode(1, as: String.self))
        }

        let dryRun = try await engage(["log", "prune", "--older-than", "31d", "--archive", archive, "--dry-run"])
        #expect(dryRun.status == 1)
        #expect(dryRun.output.contains("refusing to prune: running experiment(s) exp-old have events recorded before"), "\(dryRun.output)")
        #expect(dryRun.output.contains("or prune with --include-running-experiments"))

        let plan = try await engage(["log", "prune", "--older-than", "31d", "--archive", archive, "--dry-run", "--include-running-experiments"])
        #expect(plan.status == 0, "\(plan.output)")
        #expect(plan.output.contains("events_\(monday)"), "\(plan.output)")
        #expect(plan.output.contains("whole (dropped)"))
        #expect(plan.output.contains("archived into \(archive)"))
        #expect(try await pool.withConnection { try $0.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self) } == 27)

        try await Self.storeTallies("exp-old", pool)
        let pruned = try await engage(["log", "prune", "--older-than", "31d", "--archive", archive, "--include-running-experiments"])
        #expect(pruned.status == 0, "\(pruned.output)")
        #expect(pruned.output.contains(Self.talliesDropped), "\(pruned.output)")
        #expect(try await Self.storedTallies(pool) == 0)
        #expect(pruned.output.contains("\(day)      20  events-\(day).tsv.gz"), "\(pruned.output)")
        #expect(pruned.output.contains("pruned 20 events recorded before"))
        // The pace it ran at is stated: the default, a quarter of the time; and the priority of its
        // backend, lowered to the default niceness (the harness's PostgreSQL runs on this machine).
        #expect(pruned.output.contains("events/s, working 25% of the time; PostgreSQL backend "), "\(pruned.output)")
        #expect(pruned.output.contains(" at niceness 10)"), "\(pruned.output)")
        #expect(FileManager.default.fileExists(atPath: archive + "/manifest.json"))
        // A prune that removes nothing keeps the tallies: looks stay incremental under a daily prune.
        try await Self.storeTallies("exp-old", pool)
        let nothing = try await engage(["log", "prune", "--older-than", "31d", "--include-running-experiments"])
        #expect(nothing.status == 0, "\(nothing.output)")
        #expect(nothing.output.contains("nothing to prune"), "\(nothing.output)")
        #expect(!nothing.output.contains("dropped the incremental tallies"), "\(nothing.output)")
        #expect(try await Self.storedTallies(pool) == 1)

        let refused = try await engage(["projections", "rebuild"])
        #expect(refused.status == 1)
        #expect(refused.output.contains("error: the log no longer holds the 20 events of 1 day(s) pruned by engage log prune (recorded \(day))"),
                "\(refused.output)")
        #expect(refused.output.contains("restore their archive first (engage log restore DIR), or rebuild from the events kept with --discard-pruned"))

        try await Self.storeTallies("exp-old", pool)
        let restored = try await engage(["log", "restore", archive])
        #expect(restored.status == 0, "\(restored.output)")
        #expect(restored.output.contains("restored 20 events (0 already in the log)"), "\(restored.output)")
        #expect(restored.output.contains(Self.talliesDropped), "\(restored.output)")
        #expect(try await Self.storedTallies(pool) == 0)
        // A rerun (after a reset that failed, say) restores nothing and still drops the tallies.
        try await Self.storeTallies("exp-old", pool)
        let again = try await engage(["log", "restore", archive])
        #expect(again.output.contains("restored 0 events (20 already in the log)"), "\(again.output)")
        #expect(again.output.contains(Self.talliesDropped), "\(again.output)")
        #expect(try await Self.storedTallies(pool) == 0)
        #expect(try await pool.withConnection { try $0.query("SELECT count(*) FROM events")[0].decode(0, as: Int.self) } == 27)

        let rebuilt = try await engage(["projections", "rebuild"])
        #expect(rebuilt.status == 0, "\(rebuilt.output)")
        #expect(rebuilt.output.contains("rebuilt engagement from 27 events"), "\(rebuilt.output)")
    }

    static let talliesDropped = "dropped the incremental tallies of 1 experiment(s): their next look folds the log as it is now"

    /// A checkpoint row as an incremental look leaves it (what `ExperimentTallyStore.reset` drops).
    static func storeTallies(_ experimentID: String, _ pool: ConnectionPool) async throws {
        _ = try await pool.withConnection { connection in
            try connection.execute("""
                INSERT INTO experiment_tally_checkpoints (experiment_id, definition_key, folded_below, events, notifications,
                                                          undecodable, other_experiment, unknown_arm, outside_categories)
                VALUES (\(experimentID), 'key', pg_snapshot_xmin(pg_current_snapshot()), 20, 20, 0, 0, 0, 0)
                ON CONFLICT (experiment_id) DO NOTHING
                """)
        }
    }

    static func storedTallies(_ pool: ConnectionPool) async throws -> Int {
        try await pool.withConnection { try $0.query("SELECT count(*) FROM experiment_tally_checkpoints")[0].decode(0, as: Int.self) }
    }
}
