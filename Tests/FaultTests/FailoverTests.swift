import EngageAPI
import EventStore
import Foundation
import Postgres
import Projections
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
                let primary = try await offPool { try run.formation.waitUntilSettled() }
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

    /// `pg_autoctl perform switchover` while the load runs.
    @Test(.timeLimit(.minutes(8)))
    func aPlannedSwitchoverUnderLoadLosesNothing() async throws {
        try await FailoverRun.with(label: "switchover") { run in
            let primary = try await offPool { try run.formation.waitUntilSettled() }
            try await offPool { try run.formation.switchover() }
            let settled = try await offPool { try run.formation.waitUntilSettled() }
            #expect(settled != primary, "\(primary) is still primary after the switchover")
            try await run.expectServicesCarryOn(round: "1")
        }
    }
}

/// One test's engage serve (projector and scheduler on) and its load, on the shared formation.
struct FailoverRun {
    let formation: AutoFailoverFormation
    let pool: ConnectionPool
    let load: IngestLoad
    let app: String
    let label: String
    static let experimentsPerRound = 3

    /// Starts engage and the load, runs `body`, then stops both and checks the log against what
    /// the clients were told.
    static func with(label: String, _ body: (FailoverRun) async throws -> Void) async throws {
        let formation = try await offPool { try AutoFailoverFormation.shared() }
        _ = try await offPool { try formation.waitUntilSettled() }
        let workspace = try FaultWorkspace(label)
        defer { workspace.remove() }
        let pool = ConnectionPool(configuration: formation.database, size: 2)
        let app = "\(label)-\(UUID().uuidString.prefix(8).lowercased())"
        let key = try await KeyStore(pool: pool).create(app: app, role: .ingest).secret
        let (server, port) = try await EngageProcess.readyServer(database: formation.database, projector: true, scheduler: true,
                                                                 workspace: workspace, name: "serve")
        let load = IngestLoad(key: key, ports: [port], giveUpAfter: .seconds(900))
        let run = FailoverRun(formation: formation, pool: pool, load: load, app: app, label: label)
        async let clients: Void = load.run(clients: 4)
        do {
            try await load.waitForAcknowledgements(200)
            try await body(run)
            try await load.waitForAcknowledgements(200)
        } catch {
            load.stop()
            await clients
            _ = try? await server.terminate()
            throw FaultTestError("\(error)\nload: \(load.summary)\n\(formation.keeperLogs())", log: server.log)
        }
        load.stop()
        await clients

        #expect(server.isRunning, "engage serve died during the failover")
        #expect(try await server.terminate() == 0)
        try await load.expectLogMatches(pool, app: app)
        let ledger = load.snapshot
        #expect(Set(ledger.refusals.keys).isSubset(of: [503]), "refusals: \(ledger.refusals)")
        #expect(ledger.connectionFailures == 0, "\(ledger.connectionFailures) requests got no answer")
        print("\(label): \(load.summary)")
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

    private func waitFor(_ what: String, timeout: Duration = .seconds(120), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while (try? await condition()) != true {
            guard ContinuousClock.now < deadline else { throw FaultTestError("no \(what) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
