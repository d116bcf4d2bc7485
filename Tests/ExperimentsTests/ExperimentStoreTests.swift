import EngageCore
import Foundation
@testable import Experiments
import Postgres
import Testing
import TestSupport

@Suite("Experiment store")
struct ExperimentStoreTests {
    @Test func createStartStopRecordsTheLifecycle() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 2)
        let store = ExperimentStore(pool: pool)
        let created = try await store.create(try Fixtures.definition())
        #expect(created.status == .draft)
        let start = Fixtures.time("2026-03-01T00:00:00Z")
        let started = try await store.start(created.id, now: start)
        #expect(started.status == .running)
        #expect(started.definition.startAt == start)
        #expect(try await store.get(created.id, app: "app-1")?.status == .running)
        #expect(try await store.get(created.id, app: "other-app") == nil)
        #expect(try await store.list(app: "app-1", status: .running).records.map(\.id) == [created.id])

        await #expect(throws: ExperimentStoreError(code: .invalidTransition, experimentID: created.id,
                                                   detail: "experiment \(created.id) is running; only a draft can be started")) {
            try await store.start(created.id)
        }
        let stopped = try await store.stop(created.id)
        #expect(stopped.status == .stopped)
        let history = try await store.history(created.id)
        #expect(history.map(\.action) == [.created, .started, .stopped])
        // Each entry carries the definition after the change.
        #expect(String(decoding: history[1].payload, as: UTF8.self).contains(#""status": "running""#))
        #expect(String(decoding: history[2].payload, as: UTF8.self).contains(#""status": "stopped""#))
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM events WHERE type LIKE 'experiment\\_%' AND notification_id = 'experiment:' || \(created.id)") == 3)
        await pool.close()
    }

    /// With a synchronous standby required of every commit (`engage serve --synchronous-standbys 1`)
    /// on a primary that runs alone (the test cluster has no standby; a pg_auto_failover primary in
    /// `wait_primary` is one too), an experiment's change commits on the primary alone and is not
    /// acknowledged (`.unconfirmedCommit`), as an append is not: a failover then could undo it.
    /// Reading it back shows what was made; a repeated create finds it (409), a repeated start
    /// finds it running.
    @Test func anExperimentChangeOnAPrimaryRunningAloneIsRefusedWhileAStandbyIsRequired() async throws {
        var database = try TestPostgres.freshDatabase()
        let trusting = ConnectionPool(configuration: database, size: 1)
        database.requiredSynchronousStandbys = 1
        let pool = ConnectionPool(configuration: database, size: 1)
        let store = ExperimentStore(pool: pool)
        let definition = try Fixtures.definition()

        let created = await #expect(throws: PostgresError.self) { try await store.create(definition) }
        #expect(created?.kind == .unconfirmedCommit, "\(String(describing: created))")
        #expect(try await store.get(definition.id)?.definition.status == .draft)
        let repeated = await #expect(throws: ExperimentStoreError.self) { try await store.create(definition) }
        #expect(repeated?.code == .alreadyExists)

        let started = await #expect(throws: PostgresError.self) { try await store.start(definition.id) }
        #expect(started?.kind == .unconfirmedCommit, "\(String(describing: started))")
        #expect(try await store.get(definition.id)?.definition.status == .running)
        let stopped = await #expect(throws: PostgresError.self) { try await store.stop(definition.id) }
        #expect(stopped?.kind == .unconfirmedCommit, "\(String(describing: stopped))")
        #expect(try await store.get(definition.id)?.definition.status == .stopped)
        // Each change and its log entry committed together, unacknowledged.
        let logged = try await trusting.withConnection { connection in
            try ExperimentLog.entries(experimentID: definition.id, appID: definition.appID, on: connection).map(\.action)
        }
        #expect(logged == [.created, .started, .stopped])

        // Trusting the server's setting (no standby asked for), the same changes are acknowledged.
        let other = try Fixtures.definition(id: "\(definition.id)-trusted")
        #expect(try await ExperimentStore(pool: trusting).create(other).definition.id == other.id)
        await pool.close()
        await trusting.close()
    }

    /// The default (no standby required, none configured) through the standby-checked commit:
    /// a refused change (its `ExperimentStoreError`, or the unique violation of a repeated create,
    /// thrown inside the transaction) rolls back and leaves the pooled connection in use, not
    /// dropped; a session whose server warns about backslashes in literals still commits.
    @Test func refusedChangesRollBackOnTheSameConnectionWithoutAStandby() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let store = ExperimentStore(pool: pool)
        let definition = try Fixtures.definition()
        let session = try await pool.withConnection { $0.backendPID }

        _ = try await store.create(definition)
        let repeated = await #expect(throws: ExperimentStoreError.self) { try await store.create(definition) }
        #expect(repeated?.code == .alreadyExists)
        _ = try await store.start(definition.id)
        _ = try await store.stop(definition.id)
        let again = await #expect(throws: ExperimentStoreError.self) { try await store.stop(definition.id) }
        #expect(again?.code == .invalidTransition)
        let missing = await #expect(throws: ExperimentStoreError.self) { try await store.start("no-such-experiment") }
        #expect(missing?.code == .notFound)
        #expect(try await pool.withConnection { ($0.backendPID, $0.isIdle) } == (session, true))
        #expect(try await store.history(definition.id).map(\.action) == [.created, .started, .stopped])

        try await pool.withConnection { try $0.executeScript(unsafeSQL: "SET standard_conforming_strings = off; SET escape_string_warning = on") }
        let other = try Fixtures.definition(id: "\(definition.id)-nonstandard")
        #expect(try await store.create(other).id == other.id)
        #expect(try await pool.withConnection { $0.backendPID } == session)
        await pool.close()
    }

    /// A session lost after the COMMIT, while the check waits for the required standbys (the
    /// server restarted, the session terminated): the change is made, so it is not acknowledged
    /// and is said to be unconfirmed (`.unconfirmedCommit`: the API's `change-unconfirmed`, read it
    /// back), never a plain database error (`database-unavailable`, "nothing was stored").
    @Test(.timeLimit(.minutes(1)))
    func aSessionLostWhileTheStandbysAreAwaitedLeavesTheChangeUnconfirmed() async throws {
        var database = try TestPostgres.freshDatabase()
        let admin = ConnectionPool(configuration: database, size: 1)
        database.requiredSynchronousStandbys = 1
        database.applicationName = "engage-awaiting-\(UUID().uuidString.prefix(8).lowercased())"
        let pool = ConnectionPool(configuration: database, size: 1)
        let definition = try Fixtures.definition()
        let name = database.applicationName

        let change = Task { try await ExperimentStore(pool: pool).create(definition) }
        // The recheck's pause runs only after the COMMIT: the session is ended there.
        try await pollUntil(every: .milliseconds(10)) {
            try await admin.withConnection { connection in
                // Found first, then ended: only that session.
                guard let pid = try connection.query("""
                    SELECT pid FROM pg_stat_activity WHERE application_name = \(name) AND query LIKE '%pg_sleep(0.02)%'
                    """).rows.first?.decode(0, as: Int32.self) else { return false }
                return try connection.query("SELECT pg_terminate_backend(\(pid))")[0].decode(0, as: Bool.self)
            }
        }
        let refused = await #expect(throws: PostgresError.self) { try await change.value }
        #expect(refused?.kind == .unconfirmedCommit, "\(String(describing: refused))")
        #expect(try await ExperimentStore(pool: admin).get(definition.id)?.status == .draft)
        await pool.close()
        await admin.close()
    }

    /// A draft that is not wanted any more is stopped without ever starting ("draft or running
    /// to stopped"): it keeps no start, the scheduler never runs it, and the log says so.
    @Test func aDraftIsStoppedWithoutEverStarting() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let store = ExperimentStore(pool: pool)
        let definition = try Fixtures.definition()
        _ = try await store.create(definition)
        let stopped = try await store.stop(definition.id, reason: "not needed")
        #expect(stopped.definition.status == .stopped && stopped.definition.startAt == nil)
        #expect(try await store.get(definition.id)?.definition.status == .stopped)
        let logged = try await pool.withConnection { connection in
            try ExperimentLog.entries(experimentID: definition.id, appID: definition.appID, on: connection).map(\.action)
        }
        #expect(logged == [.created, .stopped])
        let again = await #expect(throws: ExperimentStoreError.self) { try await store.start(definition.id) }
        #expect(again?.code == .invalidTransition)
        await pool.close()
    }

    @Test func invalidAndDuplicateDefinitionsAreRefusedWithTheirFields() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let store = ExperimentStore(pool: pool)
        var bad = try Fixtures.definition()
        bad.arms[1].weight = 0.7
        bad.status = .running
        do {
            _ = try await store.create(bad)
            Issue.record("an invalid definition was stored")
        } catch let error as ExperimentStoreError {
            #expect(error.code == .invalidDefinition)
            #expect(error.problems.map(\.field) == ["arms", "start_at", "status"])
        }
        _ = try await store.create(try Fixtures.definition())
        do {
            _ = try await store.create(try Fixtures.definition())
            Issue.record("a duplicate was stored")
        } catch let error as ExperimentStoreError {
            #expect(error.code == .alreadyExists)
        }
        do {
            _ = try await store.create(json: Array(#"{"id":"x"}"#.utf8))
            Issue.record("a definition without app_id was stored")
        } catch let error as ExperimentStoreError {
            #expect(error.code == .invalidDefinition)
            #expect(error.problems.map(\.field) == ["app_id"])
        }
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiments") == 1)
        await pool.close()
    }

    /// An arm or category that ingestion would refuse on every event (a control character, a
    /// bidirectional override) is refused when the experiment is created; one written in another
    /// Unicode form is stored as ingestion writes the events' tags.
    @Test func armsAndCategoriesIngestionWouldRefuseAreRefusedAndOthersStoredInNFC() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let store = ExperimentStore(pool: pool)
        var bad = try Fixtures.definition()
        bad.categories = ["new_photo", "chat\u{7}"]
        bad.arms[1].name = "treat\u{202E}ment"
        do {
            _ = try await store.create(bad)
            Issue.record("a definition with control characters was stored")
        } catch let error as ExperimentStoreError {
            #expect(error.code == .invalidDefinition)
            #expect(error.problems == [ExperimentProblem(field: "categories[1]", problem: "must not contain control characters"),
                                       ExperimentProblem(field: "arms[1].name", problem: "must not contain control characters")])
        }
        let created = try await store.create(json: Array(#"""
            {"id": "nfd-arms", "app_id": "app-1", "categories": ["cafe\u0301"], "primary_metric": "open",
             "arms": [{"name": "control", "strategy": "none", "weight": 0.5, "control": true},
                      {"name": "vide\u0301o", "strategy": "full", "weight": 0.5}]}
            """#.utf8))
        let stored = try #require(try await store.get(created.definition.id))
        #expect(Array(stored.definition.arms[1].name.utf8) == Array("vid\u{E9}o".utf8))
        #expect(Array(stored.definition.categories[0].utf8) == Array("caf\u{E9}".utf8))
        await pool.close()
    }

    /// A schedule no date matches (April 31 and June 31) would be stored and started, and the
    /// scheduler would never analyse the experiment, saying nothing: refused when it is created.
    @Test func aScheduleThatNeverFiresIsRefused() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let store = ExperimentStore(pool: pool)
        do {
            _ = try await store.create(try Fixtures.definition(schedule: "0 0 31 4,6 *"))
            Issue.record("a definition whose schedule never fires was stored")
        } catch let error as ExperimentStoreError {
            #expect(error.code == .invalidDefinition)
            #expect(error.problems == [ExperimentProblem(field: "schedule", problem: "never fires: no date matches its day of month and month")])
        }
        // February 29 fires in leap years: accepted.
        _ = try await store.create(try Fixtures.definition(schedule: "0 0 29 2 *"))
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiments") == 1)
        await pool.close()
    }

    /// The assignment hash takes 10,000 values: an arm whose share holds none of them (0.00005 after
    /// 0.99995) would never be assigned a device, never reach its minimum, and the analysis would
    /// say "continue" to the end. Refused when created, naming the arm; a share of one value passes.
    @Test func anArmNoHashValueReachesIsRefused() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let store = ExperimentStore(pool: pool)
        var definition = try Fixtures.definition(id: "unreachable-arm")
        definition.arms[0].weight = 0.99995
        definition.arms[1].weight = 0.00005
        await #expect(throws: ExperimentStoreError.self) { _ = try await store.create(definition) }
        #expect(ExperimentStore.creationProblems(definition).map(\.field) == ["arms[1].weight"])
        definition.arms[0].weight = 0.9999
        definition.arms[1].weight = 0.0001
        #expect(ExperimentStore.creationProblems(definition).isEmpty)
        // Coverage scales the share: 0.00015 from 0.99985 holds 0.9999; a fifth of it, no value.
        definition.arms[0].weight = 0.99985
        definition.arms[1].weight = 0.00015
        #expect(ExperimentStore.creationProblems(definition).isEmpty)
        definition.coverage = 0.2
        #expect(ExperimentStore.creationProblems(definition).map(\.field) == ["arms[1].weight"])
        await pool.close()
    }

    /// A draft whose stop_at has passed: with a start_at of its own, a window defined after the
    /// fact, it starts (and is analysed at once); without one it would end before it began, and
    /// the refusal says so (it named a rule on a start_at the definition never gave).
    @Test func aDraftWhoseStopHasPassedStartsOnlyAsAWindow() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let store = ExperimentStore(pool: pool)
        var open = try Fixtures.definition(id: "no-window")
        open.stopAt = Fixtures.time("2026-03-08T00:00:00Z")
        _ = try await store.create(open)
        do {
            _ = try await store.start(open.id, now: Fixtures.time("2026-03-09T00:00:00Z"))
            Issue.record("started after its stop_at")
        } catch let error as ExperimentStoreError {
            #expect(error.problems.map(\.description) == ["stop_at: has passed; set a later stop_at, or start_at too for a window analysed after the fact"])
        }
        var window = try Fixtures.definition(id: "window")
        window.startAt = Fixtures.time("2026-03-01T00:00:00Z")
        window.stopAt = Fixtures.time("2026-03-08T00:00:00Z")
        _ = try await store.create(window)
        #expect(try await store.start(window.id, now: Fixtures.time("2026-03-09T00:00:00Z")).status == .running)
        await pool.close()
    }

    /// The floor of 1e-9 on alpha was put among the rules every stored definition is decoded
    /// with, so an experiment created earlier with alpha 1e-10 (valid then, and analysed fine:
    /// 1 - 1e-10 is not 1) no longer read: listing every experiment failed, it could be neither
    /// read nor stopped, and the scheduler skipped it for good. A new definition is refused;
    /// a stored one still reads.
    @Test func anAlphaStoredBeforeTheFloorStillReads() async throws {
        let pool = ConnectionPool(configuration: try TestPostgres.freshDatabase(), size: 1)
        let store = ExperimentStore(pool: pool)
        var strict = try Fixtures.definition()
        strict.alpha = 1e-10
        do {
            _ = try await store.create(strict)
            Issue.record("a definition with alpha 1e-10 was stored")
        } catch let error as ExperimentStoreError {
            #expect(error.problems == [ExperimentProblem(
                field: "alpha", problem: "must be at least 1e-09 (a smaller level rounds to a confidence of 1)")])
        }
        let created = try await store.create(try Fixtures.definition())
        _ = try await pool.withConnection { connection in
            try connection.execute("""
                UPDATE experiments SET definition = jsonb_set(definition, '{alpha}', '1e-10'::jsonb) WHERE id = \(created.id)
                """)
        }
        #expect(try await store.list().records.map(\.definition.alpha) == [1e-10])
        #expect(try await store.get(created.id)?.definition.alpha == 1e-10)
        #expect(try await store.start(created.id).status == .running)
        #expect(try await store.stop(created.id).status == .stopped)
        await pool.close()
    }
}
