import EmbeddedPostgres
import EngageAPI
import EventStore
import Foundation
import Glibc
import Postgres
import Projections
import Runtime
import Testing
import TestSupport

/// The primary stops answering altogether (every process of it stopped with SIGSTOP: a machine
/// frozen, a network that drops everything, connections left open), and its standby is promoted.
/// `engage serve` is on both hosts (`target_session_attrs=read-write`): ingestion goes on on the
/// new primary after the commit timeout, and the projector, whose pooled connections still lead
/// to the frozen host, must fold what is stored there too, instead of waiting for the old host.
/// A pair of its own (`StreamingReplication`): the test freezes one and promotes the other.
@Suite("Faults: failover away from a primary that stopped answering", .serialized)
struct FrozenPrimaryFailoverTests {
    @Test(.timeLimit(.minutes(4)))
    func theProjectorFoldsOnTheNewPrimary() async throws {
        let pair = try StreamingReplication(label: "frozen-failover")
        let (primaryDatabase, _) = try pair.freshDatabase()
        let name = try Self.databaseName(primaryDatabase)
        let (primary, standby) = (pair.primary, pair.replica)
        let bothHosts = PostgresConfiguration(connectionString: """
            host='\(primary.socketDirectory),\(standby.socketDirectory)' port=\(primary.options.port),\(standby.options.port) \
            user='\(EmbeddedPostgres.superuser)' dbname='\(name)' target_session_attrs=read-write
            """)
        var frozen: [Int32] = []
        defer {
            for pid in frozen { Glibc.kill(pid, SIGCONT) }
            try? primary.stop(mode: "immediate")
        }

        var configuration = EngageServer.Configuration()
        configuration.http.port = 0
        configuration.poolSize = 4
        configuration.commitTimeout = .seconds(2)
        configuration.runScheduler = false
        configuration.projector.pollInterval = .milliseconds(200)
        // Shorter than the default 30 s, so that the test is quick: any bound shows the fault.
        configuration.projector.databaseAnswerLimit = .seconds(5)
        let engage = try EngageServer(configuration: configuration, database: bothHosts,
                                      logger: Logger(label: "frozen-failover", level: .warning, sink: MemoryLogSink()))
        let serving = Task { try await engage.run() }
        defer { serving.cancel() }
        let key = try await engage.keys.create(app: "failover", role: .ingest).secret

        let load = IngestLoad(key: key, ports: [engage.port])
        async let clients: Void = load.run(clients: 2)
        defer { load.halt() }
        try await load.waitForAcknowledgements(200)
        try await waitFor("the projector to fold on the primary") { try Self.folded(on: primary.configuration(database: name)) > 0 }

        var freeze = ProcessTreeFreeze(root: try Self.postmaster(of: primary))
        try await waitFor("every process of the primary to stop") { freeze.step() }
        frozen = Array(freeze.signalled)
        try Self.promote(standby)
        let newPrimary = standby.configuration(database: name)
        // Events acknowledged from now on were committed on the new primary.
        try await load.waitForAcknowledgements(200, timeout: .seconds(90))
        load.stop()
        await clients

        // The projector folds every event the new primary holds, each once.
        var last = (folded: -1, stored: -1)
        do {
            try await waitFor("the projector to fold every event on the new primary", timeout: .seconds(60)) {
                last = (try Self.folded(on: newPrimary), try Self.stored(on: newPrimary))
                return last.folded == last.stored
            }
        } catch {
            Issue.record("the projector folded \(last.folded) of the \(last.stored) events on the new primary: \(error)")
        }
        let running = frozen.filter { !ProcessTreeFreeze.cannotRun($0) }
        #expect(running.isEmpty, "processes of the frozen primary ran: \(running.map(LocalSystem.describe))")
        serving.cancel()
        _ = try? await serving.value
        await engage.closePools()
    }

    /// The scheduler, idle on the frozen host's connection at the failover, runs analyses that
    /// fall due on the new primary.
    @Test(.timeLimit(.minutes(4)))
    func theSchedulerRunsDueAnalysesOnTheNewPrimary() async throws {
        let pair = try StreamingReplication(label: "frozen-failover-scheduler")
        let (primaryDatabase, _) = try pair.freshDatabase()
        let name = try Self.databaseName(primaryDatabase)
        let (primary, standby) = (pair.primary, pair.replica)
        let bothHosts = PostgresConfiguration(connectionString: """
            host='\(primary.socketDirectory),\(standby.socketDirectory)' port=\(primary.options.port),\(standby.options.port) \
            user='\(EmbeddedPostgres.superuser)' dbname='\(name)' target_session_attrs=read-write
            """)
        var frozen: [Int32] = []
        defer {
            for pid in frozen { Glibc.kill(pid, SIGCONT) }
            try? primary.stop(mode: "immediate")
        }

        var configuration = EngageServer.Configuration()
        configuration.http.port = 0
        // One connection: the analysis then replays on one connection, which a cancellation
        // interrupts. A replay split over several (`SplitReplay`, two connections or more) runs
        // its lanes to their end, and a lane on a pooled connection still leading to the frozen
        // host waits there as long as it stays frozen, holding the scheduler (not fixed here).
        configuration.poolSize = 1
        configuration.runProjector = false
        configuration.scheduler.pollInterval = .milliseconds(200)
        // Shorter than the default 30 s, so that the test is quick: any bound shows the fault.
        configuration.scheduler.databaseAnswerLimit = .seconds(5)
        let sink = MemoryLogSink()
        let engage = try EngageServer(configuration: configuration, database: bothHosts,
                                      logger: Logger(label: "frozen-failover", level: .debug, sink: sink))
        let serving = Task { try await engage.run() }
        defer { serving.cancel() }
        // The scheduler polls on the primary: its connection (the pool's only one, and nothing
        // else of the server's opens one here) is there.
        try await waitFor("the scheduler to poll") {
            (try Self.count("""
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                """, on: primary.configuration(database: name))) > 0
        }

        var freeze = ProcessTreeFreeze(root: try Self.postmaster(of: primary))
        try await waitFor("every process of the primary to stop") { freeze.step() }
        frozen = Array(freeze.signalled)
        try Self.promote(standby)
        let newPrimary = ConnectionPool(configuration: standby.configuration(database: name), size: 1)
        try await ScheduledRuns.startExperiments(2, pool: newPrimary, prefix: "after-failover")
        do {
            try await ScheduledRuns.waitUntilAllDone(newPrimary, experiments: 2, prefix: "after-failover", timeout: .seconds(90))
        } catch {
            let runs = try await newPrimary.withConnection { connection in
                try connection.query("SELECT experiment_id || ' ' || status FROM experiment_runs ORDER BY id").rows.map { try $0.decode(0, as: String.self) }
            }
            Issue.record("\(error); runs on the new primary: \(runs); the server's last log lines:\n\(sink.lines.suffix(15).joined(separator: "\n"))")
        }
        let running = frozen.filter { !ProcessTreeFreeze.cannotRun($0) }
        #expect(running.isEmpty, "processes of the frozen primary ran: \(running.map(LocalSystem.describe))")
        serving.cancel()
        _ = try? await serving.value
        await engage.closePools()
        await newPrimary.close()
    }

    /// `/readyz` says ready again once the new primary takes writes, although each new connection
    /// first spends its connect timeout on the frozen host listed first.
    @Test(.timeLimit(.minutes(3)))
    func readinessReturnsOnceTheNewPrimaryTakesWrites() async throws {
        let pair = try StreamingReplication(label: "frozen-failover-ready")
        let (primaryDatabase, _) = try pair.freshDatabase()
        let name = try Self.databaseName(primaryDatabase)
        let (primary, standby) = (pair.primary, pair.replica)
        let bothHosts = PostgresConfiguration(connectionString: """
            host='\(primary.socketDirectory),\(standby.socketDirectory)' port=\(primary.options.port),\(standby.options.port) \
            user='\(EmbeddedPostgres.superuser)' dbname='\(name)' target_session_attrs=read-write
            """)
        var frozen: [Int32] = []
        defer {
            for pid in frozen { Glibc.kill(pid, SIGCONT) }
            try? primary.stop(mode: "immediate")
        }
        var configuration = EngageServer.Configuration()
        configuration.http.port = 0
        configuration.poolSize = 2
        configuration.keyCacheLifetime = .seconds(600)
        configuration.runProjector = false
        configuration.runScheduler = false
        let engage = try EngageServer(configuration: configuration, database: bothHosts,
                                      logger: Logger(label: "frozen-failover", level: .warning, sink: MemoryLogSink()))
        let serving = Task { try await engage.run() }
        defer { serving.cancel() }
        let key = try await engage.keys.create(app: "failover", role: .ingest).secret
        let port = engage.port
        let readiness: @Sendable () async throws -> Int = {
            try await offPool { try RawHTTPClient(port: port, receiveTimeout: 30).request("GET", "/readyz").status }
        }
        let ingest: @Sendable (String) async throws -> Int = { label in
            try await offPool {
                try RawHTTPClient(port: port, receiveTimeout: 30).request(
                    "POST", "/v1/events", headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")],
                    body: Array(FunnelEvents.notifications(1, label: label).body.utf8)).status
            }
        }
        #expect(try await ingest("before") == 200)
        #expect(try await readiness() == 200)

        var freeze = ProcessTreeFreeze(root: try Self.postmaster(of: primary))
        try await waitFor("every process of the primary to stop") { freeze.step() }
        frozen = Array(freeze.signalled)
        try Self.promote(standby)
        // Writes succeed on the new primary...
        try await waitFor("an event to be acknowledged on the new primary") { try await ingest("after-\(UUID())") == 200 }
        // ...so readiness must say so.
        var statuses: [Int] = []
        do {
            try await waitFor("/readyz to answer 200", timeout: .seconds(30)) {
                let status = try await readiness()
                statuses.append(status)
                return status == 200
            }
        } catch {
            Issue.record("\(error): /readyz answered \(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count)) while writes succeeded")
        }
        let running = frozen.filter { !ProcessTreeFreeze.cannotRun($0) }
        #expect(running.isEmpty, "processes of the frozen primary ran: \(running.map(LocalSystem.describe))")
        serving.cancel()
        _ = try? await serving.value
        await engage.closePools()
    }

    static func count(_ query: SQL, on database: PostgresConfiguration) throws -> Int {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try connection.query(query)[0].decode(0)
    }

    static func databaseName(_ configuration: PostgresConfiguration) throws -> String {
        guard let range = configuration.connectionString.range(of: "dbname='") else { throw FaultTestError("no dbname in \(configuration)") }
        return String(configuration.connectionString[range.upperBound...].prefix { $0 != "'" })
    }

    static func folded(on database: PostgresConfiguration) throws -> Int {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try connection.query("""
            SELECT coalesce((SELECT events_processed FROM projection_checkpoints WHERE projection = 'engagement'), 0)::int8
            """)[0].decode(0)
    }

    static func stored(on database: PostgresConfiguration) throws -> Int {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try connection.query("SELECT count(*) FROM events")[0].decode(0)
    }

    static func postmaster(of cluster: EmbeddedPostgres) throws -> Int32 {
        let pidFile = try String(contentsOfFile: cluster.dataDirectory + "/postmaster.pid", encoding: .utf8)
        guard let pid = pidFile.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw FaultTestError("no postmaster pid in \(cluster.dataDirectory)/postmaster.pid")
        }
        return pid
    }

    /// Promotes the standby (`pg_promote`), waiting until it accepts writes.
    static func promote(_ standby: EmbeddedPostgres) throws {
        let connection = try Connection(configuration: standby.configuration(database: "postgres"))
        defer { connection.close() }
        guard try connection.query("SELECT pg_promote(true, 60)")[0].decode(0, as: Bool.self) else {
            throw FaultTestError("the standby was not promoted within 60 s")
        }
    }

    private func waitFor(_ what: String, timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while (try? await condition()) != true {
            guard ContinuousClock.now < deadline else { throw FaultTestError("no \(what) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
