import EmbeddedPostgres
import EngageAPI
import EventStore
import Foundation
import Glibc
import Postgres
import Testing
import TestSupport

/// SIGTERM reaches `engage serve` (projector and scheduler on) while PostgreSQL cannot finish
/// anything: every request in flight is answered 503 with Retry-After, nothing is acknowledged,
/// and the process exits 0 by itself (its own shutdown bound, 30 s, would make it exit 1).
/// Clusters of their own: these tests stop one.
@Suite("Faults: SIGTERM while PostgreSQL is stuck or unreachable")
struct ShutdownTests {
    /// Every commit of an append waits for a synchronous standby that does not exist, as when the
    /// primary lost its standby (the projector's batches do not wait for the flush, so they go on;
    /// the stopped-PostgreSQL case below holds the projector inside a database call too). With a
    /// commit timeout longer than the shutdown bound too: the requests' waits for their commits
    /// end with the HTTP grace (they held the shutdown until the commits timed out, past 30 s).
    @Test(.timeLimit(.minutes(4)), arguments: [10, 40])
    func sigtermWhileCommitsWaitForALostStandbyAnswersEveryRequestAndExitsZero(commitTimeoutSeconds: Int) async throws {
        try await ShutdownRun.with(label: "stuck-\(commitTimeoutSeconds)", databaseAnswers: true, commitTimeoutSeconds: commitTimeoutSeconds) { run in
            try run.setting("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
            try await run.waitFor("commits to wait for the standby") {
                try run.count("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'") >= 1
            }
        } recover: { run in
            try run.setting("ALTER SYSTEM RESET synchronous_standby_names")
        }
    }

    /// The server stops answering altogether (every PostgreSQL process stopped with SIGSTOP: a
    /// machine frozen, a network that drops everything).
    @Test(.timeLimit(.minutes(4)))
    func sigtermWhilePostgreSQLDoesNotAnswerAnswersEveryRequestAndExitsZero() async throws {
        try await ShutdownRun.with(label: "frozen", databaseAnswers: false) { run in
            try await run.freezeServer()
        } recover: { run in
            // A process of the tree that ran on would void the test: engage rightly acknowledges
            // whatever it manages to commit.
            let running = try run.serverProcesses().filter { !ProcessTreeFreeze.cannotRun($0) }
            #expect(running.isEmpty, "PostgreSQL processes ran while the test took PostgreSQL for frozen (the answers then say nothing of engage): \(running.map(LocalSystem.describe))")
            try run.continueServer()
        }
    }
}

/// One test's cluster, engage serve and load.
struct ShutdownRun {
    let cluster: EmbeddedPostgres
    let database: PostgresConfiguration

    /// Starts engage and the load, makes PostgreSQL stuck with `stick`, waits until every client
    /// waits for an answer, halts the load and sends SIGTERM; checks the answers and the exit,
    /// then `recover`s PostgreSQL and checks the log.
    /// `databaseAnswers`: whether reads still get answers while it is stuck.
    /// `commitTimeoutSeconds`: engage serve's `--commit-timeout`, after which a request waiting
    /// for a stuck commit is answered.
    static func with(label: String, databaseAnswers: Bool, commitTimeoutSeconds: Int = 10, stick: (ShutdownRun) async throws -> Void,
                     recover: (ShutdownRun) async throws -> Void) async throws {
        try await withMigratedCluster(workspace: "shutdown-\(label)", database: "shutdown") { run, workspace in
            let pool = ConnectionPool(configuration: run.database, size: 1)
            let key = try await KeyStore(pool: pool).create(app: "shutdown", role: .ingest).secret
            let uncachedKey = try await KeyStore(pool: pool).create(app: "shutdown-probe", role: .ingest).secret
            let (server, port) = try await EngageProcess.readyServer(database: run.database, projector: true, scheduler: true,
                                                                     options: ["--commit-timeout", String(commitTimeoutSeconds)],
                                                                     workspace: workspace, name: "serve")
            let clients = 4
            let load = IngestLoad(key: key, ports: [port], receiveTimeoutSeconds: commitTimeoutSeconds + 10)
            async let running: Void = load.run(clients: clients)
            // A wait that throws ends the test: the clients stop before it awaits them.
            defer { load.halt() }
            try await load.waitForAcknowledgements(200)

            try await stick(run)
            // Requests, probes and scrapes are answered meanwhile: a database that does not answer is
            // reported, not waited for. First a request whose key the server has not cached (its
            // lookup needs the database), while the pool still holds connections that look sound.
            let uncached = try await offPool {
                try RawHTTPClient(port: port, receiveTimeout: commitTimeoutSeconds + 20).request(
                    "POST", "/v1/events", headers: [("Authorization", "Bearer \(uncachedKey)"), ("Content-Type", "application/json")],
                    body: Array(FunnelEvents.notifications(1, label: "probe").body.utf8))
            }
            #expect(uncached.status == 503 && uncached.headers["Retry-After"] != nil, "\(uncached.status) \(uncached.text)")
            let lag = try await EngageProcess.metric("engage_projector_lag_seconds", port: port)
            #expect(lag?.isNaN == !databaseAnswers, "lag \(String(describing: lag))")
            let ready = try await offPool { try RawHTTPClient(port: port, receiveTimeout: 10).request("GET", "/readyz") }
            #expect(ready.status == (databaseAnswers ? 200 : 503), "\(ready.status) \(ready.text)")
            // No request sent from here on can be acknowledged (a retry of a batch committed before
            // included: it waits for the commit to be durable). Every client waits for one.
            load.mark()
            try await run.waitFor("every client to wait for the answer to a request sent since") { load.snapshot.sinceMark.inFlight == clients }
            // ...and the server to have begun each (this scrape is one more): a connection still in the
            // listener's backlog at SIGTERM is refused, not drained.
            try await run.waitFor("engage serve to hold every client's request") {
                (try await EngageProcess.metric("engage_http_requests_in_flight", port: port) ?? 0) >= Double(clients + 1)
            }
            load.halt()
            let sent = ContinuousClock.now
            let status = try await server.terminate(timeout: .seconds(90))
            print("shutdown \(label): engage serve exited \(status) \(ContinuousClock.now - sent) after SIGTERM; \(load.summary)")
            await running

            #expect(status == 0, "engage serve did not stop cleanly within its shutdown bound:\n\(server.log.suffix(3000))")
            let ledger = load.snapshot
            #expect(ledger.connectionFailures == 0, "\(ledger.connectionFailures) requests got no answer")
            #expect(Set(ledger.refusals.keys).isSubset(of: [503]), "refusals: \(ledger.refusals)")
            #expect(ledger.sinceMark.acknowledged == 0, "acknowledged while PostgreSQL could not commit durably: \(ledger.sinceMark)")
            #expect(ledger.sinceMark.refused == ledger.sinceMark.sent && ledger.sinceMark.sent >= clients, "\(ledger.sinceMark)")
            #expect(!server.log.contains("service_group.shutdown.timeout"))

            try await recover(run)
            try await load.expectAcknowledgedStoredOnce(pool, app: "shutdown")
            await pool.close()
        }
    }

    /// A migrated cluster of its own, in a workspace of its own (`workspace` names it), for `body`.
    /// However `body` ends, the cluster's processes go on if it left them frozen, the cluster is
    /// stopped and the workspace removed.
    static func withMigratedCluster(workspace label: String, database: String, sourceLocation: SourceLocation = #_sourceLocation,
                                    _ body: (ShutdownRun, FaultWorkspace) async throws -> Void) async throws {
        let workspace = try FaultWorkspace(label)
        defer { workspace.remove() }
        let cluster = try EmbeddedPostgres(options: .init(dataDirectory: workspace.file("pg"), database: database, settings: ["fsync": "off"]))
        #expect(try cluster.start() == .started, sourceLocation: sourceLocation)
        defer { try? cluster.stop(mode: "immediate") }
        let run = ShutdownRun(cluster: cluster, database: cluster.configuration())
        // A failure while frozen: processes stopped with SIGSTOP ignore the immediate stop above.
        defer { try? run.continueServer() }
        do {
            let connection = try Connection(configuration: run.database)
            defer { connection.close() }
            try Migrator.fromSQLDirectory().migrate(connection)
        }
        try await body(run, workspace)
    }

    func setting(_ statement: String) throws {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        try connection.execute(SQL(unsafeSQL: statement))
        try connection.execute("SELECT pg_reload_conf()")
    }

    func count(_ query: String) throws -> Int {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try connection.query(SQL(unsafeSQL: query))[0].decode(0)
    }

    /// Stops the postmaster and every process it started (SIGSTOP), including any it forks
    /// meanwhile: see `ProcessTreeFreeze`.
    func freezeServer() async throws {
        var freeze = ProcessTreeFreeze(root: try cluster.postmasterPID())
        try await waitFor("every PostgreSQL process to stop") { freeze.step() }
    }

    /// Lets every process `freezeServer()` stopped go on (SIGCONT).
    func continueServer() throws {
        for pid in try serverProcesses() { Glibc.kill(pid, SIGCONT) }
    }

    /// The postmaster and every process it started.
    func serverProcesses() throws -> [Int32] {
        LocalSystem.processTree(of: try cluster.postmasterPID())
    }

    func waitFor(_ what: String, timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while (try? await condition()) != true {
            guard ContinuousClock.now < deadline else { throw FaultTestError("no \(what) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
