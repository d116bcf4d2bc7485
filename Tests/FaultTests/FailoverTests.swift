import EngageAPI
import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Runtime
import Synchronization
import Testing
import TestSupport

/// The PostgreSQL primary lost, or handed over, under a running `engage serve` that reaches the
/// database through a multi-host URL (`target_session_attrs=read-write`), on a pg_auto_failover
/// formation (monitor, primary, synchronous secondary) built once per test process.
///
/// Each test checks what a client may rely on: every acknowledged event is in the log once, every
/// request got an answer, and the only refusals were 503 with Retry-After; and that the projector
/// and the scheduler in the same process carry on on the new primary.
@Suite("Faults: the PostgreSQL primary lost on pg_auto_failover", .serialized)
struct FailoverTests {
    /// Kills the primary node (keeper, postmaster and every process of theirs, SIGKILL), lets the
    /// secondary take over, brings the old primary back as the new secondary, and does it again
    /// the other way.
    @Test(.timeLimit(.minutes(12)))
    func aKilledPrimaryFailsOverAndBackUnderLoadWithNothingLost() async throws {
        try await FailoverRun.with(label: "failover") { run in
            for round in 1...2 {
                let primary = try await offPool { try run.formation.waitUntilStable() }
                try await offPool { try run.formation.kill(primary) }
                let killed = ContinuousClock.now
                try await run.load.waitForAcknowledgements(1, timeout: .seconds(120))
                print("failover round \(round): \(primary) killed, first acknowledgement after \(ContinuousClock.now - killed)")
                let promoted = try await offPool { try run.formation.waitForNewPrimary(replacing: primary) }
                try await run.expectServicesCarryOn(round: "\(round)")
                try await offPool { try run.formation.restart(primary) }
                let settled = try await offPool { try run.formation.waitUntilSettled() }
                #expect(settled == promoted, "the old primary rejoined as secondary")
            }
        }
    }

    /// The synchronous secondary lost under load: commits wait for it until the monitor turns
    /// synchronous replication off (`wait_primary`); meanwhile they time out (`--commit-timeout 1`)
    /// and are answered 503, unacknowledged, then resume on the primary alone; the secondary
    /// rejoins.
    @Test(.timeLimit(.minutes(8)))
    func losingTheSecondaryTimesCommitsOutThenTheyResume() async throws {
        try await FailoverRun.with(label: "secondary", options: ["--commit-timeout", "1"]) { run in
            let primary = try await offPool { try run.formation.waitUntilStable() }
            let secondary = try #require(run.formation.nodes.first { $0 != primary })
            try await offPool { try run.formation.kill(secondary) }
            try await run.waitFor("commits to time out while the primary waits for its lost standby") {
                (try await EngageProcess.metric("engage_ingest_commit_timeouts_total", port: run.port) ?? 0) >= 1
            }
            // The monitor stops waiting for the secondary: commits go on, on the primary alone.
            try await run.load.waitForAcknowledgements(200, timeout: .seconds(120))
            let states = try await offPool { try run.formation.states() }
            #expect(states.contains { $0.name == primary.name && $0.assigned == "wait_primary" }, "\(states)")
            try await offPool { try run.formation.restart(secondary) }
            let settled = try await offPool { try run.formation.waitUntilSettled() }
            #expect(settled == primary)
            #expect(run.load.snapshot.refusals[503, default: 0] >= 1)
        }
    }

    /// The same loss with `--synchronous-standbys 1`: the primary in `wait_primary` (its
    /// keeper emptied `synchronous_standby_names`) acknowledges nothing sent from then on, and
    /// readiness says why; once the secondary is back, ingestion resumes. The primary running
    /// alone is the state in which an old primary, during a switchover on a loaded machine, once
    /// acknowledged commits the promoted secondary never got (docs/high-availability.md).
    @Test(.timeLimit(.minutes(8)))
    func losingTheSecondaryWhileAStandbyIsRequiredAcknowledgesNothingUntilItReturns() async throws {
        // The default commit timeout (10 s) outlasts the check's 3 s of rechecks: refusals are
        // unconfirmed commits, not timeouts.
        try await FailoverRun.with(label: "required", options: ["--synchronous-standbys", "1"]) { run in
            let primary = try await offPool { try run.formation.waitUntilStable() }
            let secondary = try #require(run.formation.nodes.first { $0 != primary })
            try await offPool { try run.formation.kill(secondary) }
            try await run.waitFor("the primary to run alone, synchronous replication off") {
                let states = try await offPool { try run.formation.states() }
                guard states.contains(where: { $0.name == primary.name && $0.reported == "wait_primary" }) else { return false }
                return try await offPool {
                    let connection = try Connection(configuration: run.formation.configuration(of: primary))
                    defer { connection.close() }
                    return try connection.query("SHOW synchronous_standby_names")[0].decode(0, as: String.self).isEmpty
                }
            }
            run.load.mark()
            try await run.waitFor("answers to requests sent since") {
                let answered = run.load.snapshot.sinceMark
                return answered.refused + answered.acknowledged >= 8
            }
            let ledger = run.load.snapshot
            #expect(ledger.sinceMark.acknowledged == 0, "acknowledged by the primary alone: \(ledger.sinceMark)")
            let ready = try await offPool { try RawHTTPClient(port: run.port, receiveTimeout: 5).request("GET", "/readyz") }
            #expect(ready.status == 503 && ready.text.contains("synchronous-standbys-missing"), "\(ready.status) \(ready.text)")
            #expect((try await EngageProcess.metric("engage_ingest_commit_unconfirmed_total", port: run.port) ?? 0) >= 1)

            try await offPool { try run.formation.restart(secondary) }
            let settled = try await offPool { try run.formation.waitUntilSettled() }
            #expect(settled == primary)
            try await run.waitFor("readiness once the secondary streams again") {
                try await offPool { try RawHTTPClient(port: run.port, receiveTimeout: 5).request("GET", "/readyz") }.status == 200
            }
        }
    }

    /// What only reads can go to the secondary: the log tailed there never skips an event while
    /// writers commit out of order on the primary, and reads there say so.
    @Test(.timeLimit(.minutes(6)))
    func theSecondaryIsReadGaplesslyAndSaysSo() async throws {
        let formation = try await offPool { try AutoFailoverFormation.stableShared() }
        let primary = try await offPool { try formation.waitUntilSettled() }
        let secondary = try #require(formation.nodes.first { $0 != primary })
        let writer = ConnectionPool(configuration: formation.database, size: 1)
        let readerPool = ConnectionPool(configuration: formation.configuration(of: secondary), size: 1)
        let app = "secondary-\(UUID().uuidString.prefix(8).lowercased())"
        let start = try await EventStore(pool: writer).headPosition()

        let writers = 4, batchesPerWriter = 15
        let reader = LogTail()
        let tail = Task { try await reader.run(EventStore(pool: readerPool), from: start, batch: 41) { $0.appID == app } }
        try await OutOfOrderWriters.run(writers, batches: batchesPerWriter, on: formation.database) { number, batch in
            (0..<Int.random(in: 1...6)).map { n in
                AppendItem(appID: app, event: Event(eventID: EventID(UUID()), notificationID: "w\(number)-\(batch)-\(n)",
                                                    deviceID: "device-\(n)", category: "new_photo",
                                                    occurredAt: FunnelEvents.now, details: .expanded))
            }
        }
        // The synchronous secondary has every commit; once it has replayed them, the end.
        let target: String = try await writer.withConnection { try $0.query("SELECT pg_current_wal_lsn()::text")[0].decode(0) }
        try await pollUntil(every: .milliseconds(20)) {
            try await readerPool.withConnection { try $0.query("SELECT pg_last_wal_replay_lsn() >= \(target)::pg_lsn")[0].decode(0, as: Bool.self) }
        }
        reader.finish()
        let tailed = try await tail.value
        #expect(tailed.repeated.isEmpty && tailed.isInLogOrder)
        let stored = try await writer.withConnection { connection in
            try connection.query("SELECT event_id::text FROM events WHERE app_id = \(app)").rows.map { try $0.decode(0, as: String.self) }
        }
        #expect(tailed.order.count == stored.count && Set(tailed.events.values.map(\.description)) == Set(stored))

        let reads = ReadDatabase(primary: writer, replica: readerPool, logger: Logger(label: "test", sink: MemoryLogSink()),
                                 metrics: ReadReplicaMetrics(registry: MetricsRegistry()))
        let read = try await reads.read { pool in try await pool.withConnection { try $0.query("SELECT pg_is_in_recovery()")[0].decode(0, as: Bool.self) } }
        #expect(read.value && read.source.database == .replica && read.source.lag <= .seconds(60), "\(read.source)")
        // libpq's own choice of a standby among the nodes, as a read URL would make it.
        let hosts = formation.nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",")
        let preferStandby = try Connection(configuration: PostgresConfiguration(
            connectionString: "postgresql://postgres@\(hosts)/\(AutoFailoverFormation.databaseName)?target_session_attrs=prefer-standby"))
        #expect(try preferStandby.query("SELECT pg_is_in_recovery()")[0].decode(0, as: Bool.self))
        preferStandby.close()
        await writer.close()
        await readerPool.close()
    }

    /// `pg_autoctl perform switchover` while the load runs, from a stable formation (asked again
    /// if the monitor refuses it or undoes it: ``AutoFailoverFormation/switchover(timeout:)``),
    /// with `--synchronous-standbys 1` as docs/high-availability.md advises: on a loaded machine
    /// the old primary was once set to `wait_primary` on its way out and acknowledged commits
    /// alone while the secondary was promoted; required standbys refuse those.
    @Test(.timeLimit(.minutes(8)))
    func aPlannedSwitchoverUnderLoadLosesNothing() async throws {
        try await FailoverRun.with(label: "switchover", options: ["--synchronous-standbys", "1"]) { run in
            let primary = try await offPool { try run.formation.waitUntilStable() }
            let promoted = try await offPool { try run.formation.switchover() }
            let settled = try await offPool { try run.formation.waitUntilSettled() }
            #expect(settled == promoted && settled != primary, "\(primary) is still primary after the switchover")
            try await run.expectServicesCarryOn(round: "1")
        }
    }

    /// The window that once lost acknowledged events in CI, held open: the primary's commits skip
    /// their wait for the synchronous standby (its checkpointer has not published the setting
    /// that names it), a switchover promotes the secondary, and the old primary's keeper, frozen,
    /// never stops it, so it goes on taking commits the new primary will never have. engage
    /// checks each commit against the standbys' positions and refuses those (503, retried), so
    /// nothing acknowledged is lost; once the keeper runs again the old primary rejoins.
    @Test(.timeLimit(.minutes(8)))
    func aSwitchoverWhileTheOldPrimaryStillTakesCommitsThatSkipTheirWaitLosesNothing() async throws {
        try await FailoverRun.with(label: "split", options: ["--synchronous-standbys", "1"]) { run in
            let primary = try await offPool { try run.formation.waitUntilStable() }
            let checkpointer = try await offPool { try run.formation.skipSynchronousWaits(on: primary) }
            let keeper = try await offPool { try run.formation.freezeKeeper(primary) }
            var frozen = true
            defer { if frozen { run.formation.thaw(keeper + [checkpointer]) } }
            try await offPool { try run.formation.startSwitchover() }
            let promoted = try await offPool { try run.formation.waitForNewPrimary(replacing: primary) }
            // Both nodes take writes now; engage's commits on the old one are refused.
            let before = try await EngageProcess.metric("engage_ingest_commit_unconfirmed_total", port: run.port) ?? 0
            try await run.waitFor("commits on the old primary refused after the promotion") {
                (try await EngageProcess.metric("engage_ingest_commit_unconfirmed_total", port: run.port) ?? 0) > before
            }
            // The window closes (the checkpointer takes the reload: commits wait again), then the
            // server stops at once, as a demoting keeper would stop it (its controller may start
            // it again as a primary whose commits wait for a standby that is gone: engage refuses
            // them). Stopped before the keeper thaws: a thawed keeper may stop it first, and the
            // stop would then find no server and fail. Thawed, the keeper demotes it and it rejoins.
            run.formation.thaw([checkpointer])
            try await offPool { try run.formation.checkpoint(primary) }
            try await offPool { try run.formation.stopServerImmediately(primary) }
            run.formation.thaw(keeper)
            frozen = false
            let settled = try await offPool { try run.formation.waitUntilSettled() }
            #expect(settled == promoted, "the old primary rejoined as secondary")
            try await run.expectServicesCarryOn(round: "1")
        }
    }

    /// A secondary whose keeper does nothing while the monitor wants it to rejoin (every
    /// pg_autoctl process of the node frozen, its server stopped: assigned `catchingup`, reported
    /// `secondary`, unhealthy) has its keeper restarted by the harness's waits after
    /// ``AutoFailoverFormation/idleRejoinLimit``, as an operator restarts the service, and rejoins:
    /// what a CI run's switchover needed when pg_autoctl hung after a failed pg_rewind.
    @Test(.timeLimit(.minutes(8)))
    func aKeeperThatDoesNothingWhileItsNodeShouldRejoinIsRestarted() async throws {
        let formation = try await offPool { try AutoFailoverFormation.stableShared() }
        let primary = try await offPool { try formation.waitUntilStable() }
        let secondary = try #require(formation.nodes.first { $0 != primary })
        let keeper = formation.keeperPID(secondary)
        _ = try await offPool { try formation.freezeServices(secondary) }
        try await offPool { try formation.stopServerImmediately(secondary) }
        let settled = try await offPool { try formation.waitUntilSettled(timeout: .seconds(240)) }
        #expect(settled == primary)
        #expect(formation.keeperPID(secondary) != keeper, "the secondary rejoined without its keeper restarted")
    }

    /// A formation a test left stuck (here the secondary's keeper frozen: it never reports
    /// again, so the formation is never stable) is not waited on by the next test: that one gets
    /// a new formation, stable, and the stuck one's processes and directory are gone.
    @Test(.timeLimit(.minutes(8)))
    func aFormationLeftStuckIsRebuiltForTheNextTest() async throws {
        let stuck = try await offPool { try AutoFailoverFormation.stableShared() }
        let primary = try await offPool { try stuck.waitUntilStable() }
        let secondary = try #require(stuck.nodes.first { $0 != primary })
        _ = try await offPool { try stuck.freezeKeeper(secondary) }
        #expect(!stuck.processes().isEmpty)
        let next = try await offPool { try AutoFailoverFormation.stableShared(timeout: .seconds(30)) }
        #expect(next !== stuck && next.directory != stuck.directory)
        #expect(stuck.processes().isEmpty, "processes of the stuck formation still run")
        #expect(!FileManager.default.fileExists(atPath: stuck.directory))
        #expect(try await offPool { try AutoFailoverFormation.shared() } === next)
        #expect(!next.processes().isEmpty)
    }
}

/// One test's engage serve (projector and scheduler on) and its load, on the shared formation.
struct FailoverRun {
    let formation: AutoFailoverFormation
    let pool: ConnectionPool
    let load: IngestLoad
    let app: String
    let label: String
    /// Where engage serve listens.
    let port: Int
    static let experimentsPerRound = 3

    /// Starts engage and the load, runs `body`, then stops both and checks the log against what
    /// the clients were told.
    static func with(label: String, options: [String] = [], _ body: (FailoverRun) async throws -> Void) async throws {
        let formation = try await offPool { try AutoFailoverFormation.stableShared() }
        let workspace = try FaultWorkspace(label)
        defer { workspace.remove() }
        let pool = ConnectionPool(configuration: formation.database, size: 2)
        let app = "\(label)-\(UUID().uuidString.prefix(8).lowercased())"
        let key = try await KeyStore(pool: pool).create(app: app, role: .ingest).secret
        let (server, port) = try await EngageProcess.readyServer(database: formation.database, projector: true, scheduler: true,
                                                                 options: options, workspace: workspace, name: "serve")
        let load = IngestLoad(key: key, ports: [port], giveUpAfter: .seconds(900))
        let run = FailoverRun(formation: formation, pool: pool, load: load, app: app, label: label, port: port)
        async let clients: Void = load.run(clients: 4)
        do {
            try await load.waitForAcknowledgements(200)
            try await body(run)
            try await load.waitForAcknowledgements(200)
        } catch {
            load.stop()
            await clients
            _ = try? await server.terminate()
            throw FaultTestError("\(error)\nload: \(load.summary)\n\(formation.diagnostics())", log: server.log)
        }
        load.stop()
        await clients

        #expect(server.isRunning, "engage serve died during the failover")
        #expect(try await server.terminate() == 0)
        let logMatches = try await load.expectLogMatches(pool, app: app)
        let ledger = load.snapshot
        #expect(Set(ledger.refusals.keys).isSubset(of: [503]), "refusals: \(ledger.refusals)")
        #expect(ledger.connectionFailures == 0, "\(ledger.connectionFailures) requests got no answer")
        print("\(label): \(load.summary)")
        if !logMatches || !Set(ledger.refusals.keys).isSubset(of: [503]) || ledger.connectionFailures > 0 {
            // The formation's directory goes with the test process: what it did is printed now.
            print("\(label): the formation's story\n\(formation.diagnostics())\nengage serve's log (tail):\n"
                  + server.log.split(separator: "\n").suffix(60).joined(separator: "\n"))
        }
        await pool.close()
    }

    /// On the new primary the projector folds events ingested after the change, without counting
    /// any twice, and the scheduler completes each due run once.
    func expectServicesCarryOn(round: String) async throws {
        let prefix = "\(label)-\(UUID().uuidString.prefix(6).lowercased())-\(round)"
        try await retrying { try await ScheduledRuns.startExperiments(Self.experimentsPerRound, pool: pool, prefix: prefix) }
        try await load.waitForAcknowledgements(100)
        let head = try await retrying { try await logHead() }
        try await waitFor("the projector to fold events stored after the change") {
            try await pool.withConnection { try EngagementStore.checkpoint(EngagementStore.projectionName, on: $0) } >= head
        }
        try await ScheduledRuns.waitUntilAllDone(pool, experiments: Self.experimentsPerRound, prefix: prefix, timeout: .seconds(120))
        let decisions = try await pool.withConnection { connection in
            try connection.query("""
                SELECT r.id, count(e.event_id) FROM experiment_runs r
                LEFT JOIN events e ON e.type = 'experiment_analysed' AND (e.payload->>'run_id')::int8 = r.id
                WHERE r.experiment_id LIKE \(prefix + "-%") GROUP BY r.id
                """).rows.map { (try $0.decode(0, as: Int.self), try $0.decode(1, as: Int.self)) }
        }
        #expect(decisions.count == Self.experimentsPerRound)
        #expect(decisions.allSatisfy { $0.1 == 1 }, "decisions per run: \(decisions)")
        // Nothing folded twice: the checkpoint's count is the number of events before it.
        let (processed, before) = try await pool.withConnection { connection in
            let row = try connection.query("""
                SELECT c.events_processed,
                       (SELECT count(*) FROM events e WHERE (e.transaction_id, e.position) <= (c.transaction_id, c.position))
                FROM projection_checkpoints c WHERE c.projection = \(EngagementStore.projectionName)
                """)[0]
            return (try row.decode(0, as: Int.self), try row.decode(1, as: Int.self))
        }
        #expect(processed == before, "the projector counted \(processed) events, the log holds \(before) up to its checkpoint")
    }

    private func logHead() async throws -> LogPosition {
        try await pool.withConnection { connection in
            let row = try connection.query("SELECT transaction_id, position FROM events ORDER BY transaction_id DESC, position DESC LIMIT 1")[0]
            return LogPosition(transactionID: try row.decode(0), sequence: try row.decode(1))
        }
    }

    /// Runs `body` until it succeeds; queries may fail while the formation settles.
    private func retrying<T>(_ body: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do { return try await body() } catch {
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    func waitFor(_ what: String, timeout: Duration = .seconds(120), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while (try? await condition()) != true {
            guard ContinuousClock.now < deadline else { throw FaultTestError("no \(what) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
