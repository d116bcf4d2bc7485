import EngageCore
import Foundation
@testable import Experiments
import Postgres
import Runtime
import Synchronization
import Testing
import TestSupport

@Suite("Scheduler")
struct SchedulerTests {
    /// A started every-minute experiment in a fresh database.
    static func runningExperiment(schedule: String = "* * * * *", start: Timestamp) async throws -> (PostgresConfiguration, ConnectionPool) {
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let store = ExperimentStore(pool: pool)
        _ = try await store.create(try Fixtures.definition(schedule: schedule))
        _ = try await store.start("strategy-full-vs-adaptive", now: start)
        return (database, pool)
    }

    @Test func twoSchedulersCompleteEveryDueRunExactlyOnce() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let clock = ManualTime(wallClock: start)
        let a = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        let b = Fixtures.scheduler(database, clock: clock, owner: "scheduler-b")
        var completed = 0
        for _ in 0..<10 {
            clock.advance(seconds: 60)
            async let byA = a.tick()
            async let byB = b.tick()
            completed += try await byA + byB
        }
        #expect(completed == 10)
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs") == 10)
        #expect(try await Fixtures.count(pool, "SELECT count(DISTINCT scheduled_for) FROM experiment_runs") == 10)
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs WHERE status = 'done' AND attempts = 1") == 10)
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs WHERE decision = 'continue' AND result IS NOT NULL") == 10)
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.scheduledFor) == (1...10).reversed().map { Fixtures.time("2026-03-01T00:00:00Z").adding(microseconds: Int64($0) * 60_000_000) })
        for scheduler in [a, b] { await scheduler.pool.close() }
        await pool.close()
    }

    @Test func aRunLeftByACrashedSchedulerIsRetriedOnceByAnother() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        // As a killed process leaves it: claimed, lease expired, never finished.
        try await pool.withConnection { connection in
            _ = try connection.execute("""
                INSERT INTO experiment_runs (experiment_id, scheduled_for, status, lease_owner, lease_until, attempts, started_at)
                VALUES ('strategy-full-vs-adaptive', '2026-03-01T00:01:00Z', 'running', 'crashed', now() - interval '1 second', 1, now())
                """)
        }
        let b = Fixtures.scheduler(database, clock: clock, owner: "scheduler-b")
        #expect(try await b.tick() == 1)
        #expect(try await b.tick() == 0)
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.count == 1)
        #expect(runs.first?.status == .done)
        #expect(runs.first?.attempts == 2)
        #expect(runs.first?.leaseOwner == "scheduler-b")
        await b.pool.close()
        await pool.close()
    }

    @Test func aSchedulerThatLostItsLeaseStoresNothing() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        // A dies right after claiming (the failpoint throws where `=crash` would exit).
        let a = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a") { configuration in
            configuration.failpoint = { name in if name == "scheduler.after-claim" { throw FailpointHit(name: name) } }
        }
        await #expect(throws: FailpointHit(name: "scheduler.after-claim")) { try await a.tick() }
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs WHERE status = 'running' AND lease_owner = 'scheduler-a'") == 1)
        let b = Fixtures.scheduler(database, clock: clock, owner: "scheduler-b")
        // The lease is still valid: B leaves the run alone.
        #expect(try await b.tick() == 0)
        try await pool.withConnection { _ = try $0.execute("UPDATE experiment_runs SET lease_until = now() - interval '1 second'") }
        #expect(try await b.tick() == 1)
        // A comes back with its old claim: fenced off by the attempt number.
        let stale = Scheduler.Claim(runID: 1, experimentID: "strategy-full-vs-adaptive",
                                    scheduledFor: Fixtures.time("2026-03-01T00:01:00Z"), attempt: 1, isManual: false)
        let result = ExperimentAnalysis.run(definition: try Fixtures.definition(),
                                            tallies: ExperimentTallies(definition: try Fixtures.definition()), now: clock.wallClock)
        #expect(try await a.finish(stale, result, appID: "app-1") == false)
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs WHERE status = 'done' AND attempts = 2 AND lease_owner = 'scheduler-b'") == 1)
        for scheduler in [a, b] { await scheduler.pool.close() }
        await pool.close()
    }

    @Test func afterDowntimeAMissedScheduleRunsOnceNotABurst() async throws {
        let start = Fixtures.time("2026-03-01T00:00:00Z")
        let (database, pool) = try await Self.runningExperiment(schedule: "0 * * * *", start: start)
        try await pool.withConnection { connection in
            _ = try connection.execute("""
                INSERT INTO experiment_runs (experiment_id, scheduled_for, status, attempts, decision)
                VALUES ('strategy-full-vs-adaptive', '2026-03-10T07:00:00Z', 'done', 1, 'continue')
                """)
        }
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-10T12:34:00Z"))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        #expect(try await scheduler.tick() == 1)
        #expect(try await scheduler.tick() == 0)
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.scheduledFor) == [Fixtures.time("2026-03-10T12:00:00Z"), Fixtures.time("2026-03-10T07:00:00Z")])
        #expect(runs.first?.status == .done)
        // The second look: one earlier run was done.
        let result = try #require(runs.first?.result)
        #expect(String(decoding: result, as: UTF8.self).contains(#""look": 2"#))
        await scheduler.pool.close()
        await pool.close()
    }

    /// The wall clock stepped forward by a day (a bad NTP answer, a VM restored from a
    /// snapshot) and back: the run enqueued at the false time must not stall the schedule until
    /// the real clock reaches it. Each minute after the correction is analysed once.
    @Test func aClockSteppedForwardAndBackDoesNotStallTheSchedule() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        #expect(try await scheduler.tick() == 1)
        clock.setWallClock(Fixtures.time("2026-03-02T00:01:10Z"))
        #expect(try await scheduler.tick() == 1)
        clock.setWallClock(Fixtures.time("2026-03-01T00:02:10Z"))
        #expect(try await scheduler.tick() == 1)
        clock.setWallClock(Fixtures.time("2026-03-01T00:03:10Z"))
        #expect(try await scheduler.tick() == 1)
        #expect(try await scheduler.tick() == 0)
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.scheduledFor) == ["2026-03-02T00:01:00Z", "2026-03-01T00:03:00Z", "2026-03-01T00:02:00Z",
                                               "2026-03-01T00:01:00Z"].map(Fixtures.time))
        #expect(runs.allSatisfy { $0.status == .done && $0.attempts == 1 })
        // The real clock reaching the false time runs nothing twice.
        clock.setWallClock(Fixtures.time("2026-03-02T00:01:30Z"))
        #expect(try await scheduler.tick() == 0)
        await scheduler.pool.close()
        await pool.close()
    }

    /// The running experiment of `runningExperiment` beside a running one, `a-broken-one`, whose
    /// stored definition this build does not decode (weights adding up to 1.2); with that
    /// definition's JSON as it decodes (`good`) and as stored (`broken`).
    static func runningExperimentBesideABrokenOne() async throws
        -> (database: PostgresConfiguration, pool: ConnectionPool, good: String, broken: String) {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        var definition = try Fixtures.definition(id: "a-broken-one")
        definition.status = .running
        definition.startAt = start
        let good = String(decoding: definition.canonicalJSON, as: UTF8.self)
        let broken = good.replacingOccurrences(of: #""weight":0.5,"control":false"#, with: #""weight":0.7,"control":false"#)
        try await pool.withConnection { connection in
            _ = try connection.execute("""
                INSERT INTO experiments (id, app_id, definition, status) VALUES ('a-broken-one', 'app-1', \(broken)::jsonb, 'running')
                """)
        }
        return (database, pool, good, broken)
    }

    /// A stored definition that does not decode under this build's rules (one stored by an older
    /// release with looser ones, or edited by hand; here weights adding up to 1.2) made every
    /// poll throw before enqueueing anything, so one experiment stopped the schedule of all the
    /// others. It is skipped and logged instead.
    @Test func aStoredDefinitionThatDoesNotDecodeStopsNoOtherSchedule() async throws {
        let (database, pool, _, _) = try await Self.runningExperimentBesideABrokenOne()
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        #expect(try await scheduler.tick() == 1)
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.scheduledFor) == [Fixtures.time("2026-03-01T00:01:00Z")])
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs WHERE experiment_id = 'a-broken-one'") == 0)
        await scheduler.pool.close()
        await pool.close()
    }

    /// The undecodable definition is told once, when found, not at every poll (17,280 lines a day
    /// at the 5 s default), and again once it is mended and broken anew.
    @Test func anUndecodableDefinitionIsLoggedOnceNotAtEveryPoll() async throws {
        let (database, pool, good, json) = try await Self.runningExperimentBesideABrokenOne()
        let sink = MemoryLogSink()
        var configuration = Scheduler.Configuration()
        configuration.ownerID = "scheduler-a"
        let scheduler = Scheduler(pool: ConnectionPool(configuration: database, size: 2), configuration: configuration,
                                  time: ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z")),
                                  logger: Logger(label: "test", level: .debug, sink: sink))
        let told = { sink.lines.filter { $0.contains("scheduler.definition.undecodable") }.count }
        for _ in 0..<3 { try await scheduler.enqueueDue() }
        #expect(told() == 1)
        try await pool.withConnection { connection in
            _ = try connection.execute("UPDATE experiments SET definition = \(good)::jsonb WHERE id = 'a-broken-one'")
        }
        try await scheduler.enqueueDue()
        try await pool.withConnection { connection in
            _ = try connection.execute("UPDATE experiments SET definition = \(json)::jsonb WHERE id = 'a-broken-one'")
        }
        for _ in 0..<2 { try await scheduler.enqueueDue() }
        #expect(told() == 2)
        await scheduler.pool.close()
        await pool.close()
    }

    /// A failed run's retries came back to back in the same poll, milliseconds apart: an outage
    /// of the database or a replica shorter than one poll interval used up all three attempts and
    /// the look was lost for good. A failed run is retried at the next poll.
    @Test func aRunIsRetriedAtTheNextPollNotAtOnce() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        let outage = Mutex(true)
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a") { configuration in
            configuration.failpoint = { name in
                if name == "scheduler.after-analysis", outage.withLock({ $0 }) { throw FailpointHit(name: name) }
            }
        }
        #expect(try await scheduler.tick() == 0)
        var runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.status) == [.pending] && runs.first?.attempts == 1, "\(runs.map(\.status)) \(runs.map(\.attempts))")
        // The outage is over by the next poll.
        outage.withLock { $0 = false }
        #expect(try await scheduler.tick() == 1)
        runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.status) == [.done] && runs.first?.attempts == 2)
        await scheduler.pool.close()
        await pool.close()
    }

    @Test func stoppedAndDraftExperimentsAreNotScheduled() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let store = ExperimentStore(pool: pool)
        _ = try await store.create(try Fixtures.definition(id: "draft-one"))
        _ = try await store.stop("strategy-full-vs-adaptive")
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:05:00Z"))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        #expect(try await scheduler.tick() == 0)
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs") == 0)
        await scheduler.pool.close()
        await pool.close()
    }
}

extension SchedulerTests {
    /// The experiment's log entries: action and payload text.
    static func logEntries(_ pool: ConnectionPool) async throws -> [(action: ExperimentLogEntry.Action, payload: String)] {
        try await pool.withConnection { connection in
            try ExperimentLog.entries(experimentID: "strategy-full-vs-adaptive", appID: "app-1", on: connection)
                .map { ($0.action, String(decoding: $0.payload, as: UTF8.self)) }
        }
    }

    @Test func everyStoredDecisionIsAppendedToTheLogOnce() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let clock = ManualTime(wallClock: start)
        let a = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        let b = Fixtures.scheduler(database, clock: clock, owner: "scheduler-b")
        for _ in 0..<3 {
            clock.advance(seconds: 60)
            async let byA = a.tick()
            async let byB = b.tick()
            _ = try await (byA, byB)
        }
        let entries = try await Self.logEntries(pool)
        #expect(entries.map(\.action) == [.created, .started, .analysed, .analysed, .analysed])
        let runIDs = try await pool.withConnection { connection in
            try connection.query("SELECT id FROM experiment_runs WHERE status = 'done' ORDER BY id").rows.map { try $0.decode(0, as: Int64.self) }
        }
        #expect(runIDs.count == 3)
        for (entry, runID) in zip(entries.dropFirst(2), runIDs) {
            #expect(entry.payload.contains(#""run_id": \#(runID)"#))
            #expect(entry.payload.contains(#""decision": "continue""#))
        }
        // Neither the projection nor an analysis replay reads them as notification events.
        #expect(try await Fixtures.count(pool, "SELECT count(*) FROM events WHERE experiment_id IS NOT NULL OR device_id <> ''") == 0)
        for scheduler in [a, b] { await scheduler.pool.close() }
        await pool.close()
    }

    @Test func reachingStopAtRunsALastAnalysisThatStopsTheExperiment() async throws {
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let store = ExperimentStore(pool: pool)
        var definition = try Fixtures.definition(schedule: "0 0 * * *")
        definition.stopAt = Fixtures.time("2026-03-02T06:30:00Z")
        _ = try await store.create(definition)
        _ = try await store.start(definition.id, now: Fixtures.time("2026-03-01T00:00:00Z"))
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-02T05:00:00Z"))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        #expect(try await scheduler.tick() == 1)
        #expect(try await store.get(definition.id)?.status == .running)
        // The daily schedule would next run at midnight; stop_at brings the last run forward.
        clock.setWallClock(Fixtures.time("2026-03-02T06:31:00Z"))
        #expect(try await scheduler.tick() == 1)
        #expect(try await scheduler.tick() == 0)
        let runs = try await store.runs(definition.id)
        #expect(runs.map(\.scheduledFor) == [Fixtures.time("2026-03-02T06:30:00Z"), Fixtures.time("2026-03-02T00:00:00Z")])
        #expect(runs.map(\.decision) == ["stop_no_effect", "continue"])
        #expect(try await store.get(definition.id)?.status == .stopped)
        let entries = try await Self.logEntries(pool)
        #expect(entries.map(\.action) == [.created, .started, .analysed, .analysed, .stopped])
        #expect(entries.last?.payload.contains("decided: stop, no effect (schedule_ended)") == true)
        // Stopped: later times are not scheduled.
        clock.setWallClock(Fixtures.time("2026-03-04T00:00:00Z"))
        #expect(try await scheduler.tick() == 0)
        await scheduler.pool.close()
        await pool.close()
    }

    /// The last run, at stop_at, has no later scheduled time to make up for it: when its every
    /// attempt failed (three, one a poll), the experiment stayed running past its stop time for
    /// good, with no run ever due again.
    /// It is stopped at the next poll, saying why and how to get the analysis.
    @Test func aFinalRunThatFailsForGoodStillStopsTheExperiment() async throws {
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: 2)
        let store = ExperimentStore(pool: pool)
        var definition = try Fixtures.definition(schedule: "0 0 * * *")
        definition.stopAt = Fixtures.time("2026-03-02T06:30:00Z")
        _ = try await store.create(definition)
        _ = try await store.start(definition.id, now: Fixtures.time("2026-03-01T00:00:00Z"))
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-02T06:31:00Z"))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a") { configuration in
            configuration.failpoint = { name in if name == "scheduler.before-finish" { throw FailpointHit(name: name) } }
        }
        for _ in 0..<3 { #expect(try await scheduler.tick() == 0) }
        let runs = try await store.runs(definition.id)
        #expect(runs.map(\.scheduledFor) == [Fixtures.time("2026-03-02T06:30:00Z")])
        #expect(runs.first?.status == .failed && runs.first?.attempts == 3)
        // The next poll finds it over.
        #expect(try await scheduler.tick() == 0)
        #expect(try await store.get(definition.id)?.status == .stopped)
        let entries = try await Self.logEntries(pool)
        #expect(entries.map(\.action) == [.created, .started, .stopped])
        #expect(entries.last?.payload.contains("the final run \(runs.first?.id ?? 0) at stop_at failed after 3 attempts") == true,
                "\(entries.last?.payload ?? "")")
        clock.setWallClock(Fixtures.time("2026-03-03T00:00:00Z"))
        #expect(try await scheduler.tick() == 0)
        await scheduler.pool.close()
        await pool.close()
    }

    @Test(.timeLimit(.minutes(2)))
    func theLeaseIsRenewedWhileALongAnalysisRuns() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        // A's analysis lasts until the test lets it end; its lease timer runs on the test's clock.
        let (release, released) = AsyncStream.makeStream(of: Never.self)
        let a = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a") { configuration in
            configuration.failpoint = { name in
                if name == "scheduler.after-analysis" { for await _ in release {} }
            }
        }
        // B's own clock: A's, moved on to time A's renewals, would make the next minute's run due.
        let b = Fixtures.scheduler(database, clock: ManualTime(wallClock: clock.wallClock), owner: "scheduler-b")
        async let byA = a.tick()
        try await pollUntil { clock.sleepers == 1 }
        for _ in 0..<3 {
            // The lease as if it ran out: B would take the run over now, unless A renews it.
            try await pool.withConnection { _ = try $0.execute("UPDATE experiment_runs SET lease_until = now() - interval '1 second'") }
            clock.advance(by: Scheduler.Configuration().leaseDuration / 3)
            try await pollUntil {
                try await Fixtures.count(pool, "SELECT count(*) FROM experiment_runs WHERE lease_until > now()") == 1 && clock.sleepers == 1
            }
            #expect(try await b.tick() == 0)
        }
        released.finish()
        #expect(try await byA == 1)
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.count == 1)
        #expect(runs.first?.status == .done)
        #expect(runs.first?.attempts == 1)
        #expect(runs.first?.leaseOwner == "scheduler-a")
        for scheduler in [a, b] { await scheduler.pool.close() }
        await pool.close()
    }
}

struct FailpointHit: Error, Equatable {
    var name: String
}

extension SchedulerTests {
    /// A scheduled run queued before the experiment was stopped (a scheduler's insert racing the
    /// stop, or one that died before its claim) is closed when claimed, not analysed: no decision
    /// is added to a finished experiment. A run asked for by hand is still analysed.
    @Test func aScheduledRunQueuedBeforeAStopIsClosedNotAnalysed() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        try await pool.withConnection { connection in
            _ = try connection.execute("""
                INSERT INTO experiment_runs (experiment_id, scheduled_for) VALUES ('strategy-full-vs-adaptive', '2026-03-01T00:01:00Z')
                """)
        }
        _ = try await ExperimentStore(pool: pool).stop("strategy-full-vs-adaptive")
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        #expect(try await scheduler.tick() == 0)
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.status) == [.failed])
        #expect(runs.first?.error == "not analysed: the experiment is no longer running (stopped), and a scheduled run is analysed only while it runs")
        #expect(try await Self.logEntries(pool).map(\.action) == [.created, .started, .stopped])

        let manual = try await scheduler.runNow(experimentID: "strategy-full-vs-adaptive")
        #expect(manual.status == .done && manual.isManual)
        #expect(try await Self.logEntries(pool).map(\.action) == [.created, .started, .stopped, .analysed])
        await scheduler.pool.close()
        await pool.close()
    }

    /// Stopped while a scheduled run's analysis runs (by hand, or by another scheduler's final
    /// decision): the result is not stored and no decision follows the stop in the log.
    @Test func aStopDuringTheAnalysisKeepsItsResultOutOfTheLog() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let clock = ManualTime(wallClock: Fixtures.time("2026-03-01T00:01:10Z"))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a") { configuration in
            configuration.failpoint = { name in
                if name == "scheduler.after-analysis" { _ = try await ExperimentStore(pool: pool).stop("strategy-full-vs-adaptive") }
            }
        }
        #expect(try await scheduler.tick() == 0)
        let runs = try await ExperimentStore(pool: pool).runs("strategy-full-vs-adaptive")
        #expect(runs.map(\.status) == [.failed])
        #expect(runs.first?.error == "not analysed: the experiment is no longer running (stopped), and a scheduled run is analysed only while it runs")
        #expect(try await Self.logEntries(pool).map(\.action) == [.created, .started, .stopped])
        await scheduler.pool.close()
        await pool.close()
    }

    /// A manual run asked for at the very microsecond of another run of the experiment takes the
    /// next free one instead of failing on the runs' unique key.
    @Test func aManualRunAtTheMicrosecondOfAnotherTakesTheNext() async throws {
        let start = Fixtures.time("2026-03-01T00:00:30Z")
        let (database, pool) = try await Self.runningExperiment(start: start)
        let at = Fixtures.time("2026-03-01T00:02:00Z")
        try await pool.withConnection { connection in
            _ = try connection.execute("""
                INSERT INTO experiment_runs (experiment_id, scheduled_for, status)
                VALUES ('strategy-full-vs-adaptive', \(at.postgres), 'done'), ('strategy-full-vs-adaptive', \(at.adding(microseconds: 1).postgres), 'done')
                """)
        }
        let clock = ManualTime(wallClock: at.adding(microseconds: 1))
        let scheduler = Fixtures.scheduler(database, clock: clock, owner: "scheduler-a")
        let manual = try await scheduler.runNow(experimentID: "strategy-full-vs-adaptive")
        #expect(manual.status == .done)
        #expect(manual.scheduledFor == at.adding(microseconds: 2))
        // A whole minute is left to the schedule, which may still queue a run there.
        clock.setWallClock(Fixtures.time("2026-03-01T00:03:00Z"))
        let onTheMinute = try await scheduler.runNow(experimentID: "strategy-full-vs-adaptive")
        #expect(onTheMinute.scheduledFor == Fixtures.time("2026-03-01T00:03:00.000001Z"))
        #expect(Scheduler.mayBeScheduled(Fixtures.time("2026-03-01T00:03:00Z"), stopAt: nil))
        #expect(Scheduler.mayBeScheduled(Fixtures.time("2026-03-01T00:03:07.5Z"), stopAt: Fixtures.time("2026-03-01T00:03:07.5Z")))
        #expect(!Scheduler.mayBeScheduled(Fixtures.time("2026-03-01T00:03:07.5Z"), stopAt: nil))
        await scheduler.pool.close()
        await pool.close()
    }
}
