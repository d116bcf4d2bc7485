import EngageAPI
import EventStore
import Foundation
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
/// A pair of its own (`FrozenPrimaryPair`): the test freezes one and promotes the other.
@Suite("Faults: failover away from a primary that stopped answering", .serialized)
struct FrozenPrimaryFailoverTests {
    @Test(.timeLimit(.minutes(4)))
    func theProjectorFoldsOnTheNewPrimary() async throws {
        try await FrozenPrimaryPair.with(label: "frozen-failover") { pair in
            var configuration = EngageServer.Configuration()
            configuration.http.port = 0
            configuration.poolSize = 4
            configuration.commitTimeout = .seconds(2)
            configuration.runScheduler = false
            configuration.projector.pollInterval = .milliseconds(200)
            // Shorter than the default 30 s, so that the test is quick: any bound shows the fault.
            configuration.projector.databaseAnswerLimit = .seconds(5)
            let logger = Logger(label: "frozen-failover", level: .warning, sink: MemoryLogSink())
            try await pair.serving(configuration, logger: logger) { engage in
                let key = try await engage.keys.create(app: "failover", role: .ingest).secret
                let load = IngestLoad(key: key, ports: [engage.port])
                async let clients: Void = load.run(clients: 2)
                defer { load.halt() }
                try await load.waitForAcknowledgements(200)
                try await pair.waitFor("the projector to fold on the primary") {
                    try Self.folded(on: pair.primary.configuration(database: pair.databaseName)) > 0
                }

                try await pair.freezePrimaryAndPromoteStandby()
                let newPrimary = pair.standby.configuration(database: pair.databaseName)
                // Events acknowledged from now on were committed on the new primary.
                try await load.waitForAcknowledgements(200, timeout: .seconds(90))
                load.stop()
                await clients

                // The projector folds every event the new primary holds, each once.
                var last = (folded: -1, stored: -1)
                do {
                    try await pair.waitFor("the projector to fold every event on the new primary", timeout: .seconds(60)) {
                        last = (try Self.folded(on: newPrimary), try Self.stored(on: newPrimary))
                        return last.folded == last.stored
                    }
                } catch {
                    Issue.record("the projector folded \(last.folded) of the \(last.stored) events on the new primary: \(error)")
                }
            }
        }
    }

    /// The scheduler, idle on the frozen host's connection at the failover, runs analyses that
    /// fall due on the new primary.
    @Test(.timeLimit(.minutes(4)))
    func theSchedulerRunsDueAnalysesOnTheNewPrimary() async throws {
        try await FrozenPrimaryPair.with(label: "frozen-failover-scheduler") { pair in
            // One connection: the analysis replays on it (two: the next test).
            let configuration = Self.schedulerOnly(poolSize: 1)
            let sink = MemoryLogSink()
            try await pair.serving(configuration, logger: Logger(label: "frozen-failover", level: .debug, sink: sink)) { _ in
                // The scheduler polls on the primary: its connection (the pool's only one, and nothing
                // else of the server's opens one here) is there.
                try await pair.waitFor("the scheduler to poll") {
                    try Self.clientBackends(on: pair.primary.configuration(database: pair.databaseName)) > 0
                }
                try await Self.failOverAndExpectDueRunsDone(pair, sink: sink)
            }
        }
    }

    /// Two connections, both to the primary when it freezes: an analysis reads its replay and
    /// CUPED's pre-period at once, one of them on the connection still leading to the frozen
    /// host. That read got no answer for as long as the host stayed frozen while the lease was
    /// renewed on the other connection, so the scheduler (and a stop of the server) waited with
    /// it. Each read of an analysis now ends once the database has sent nothing for
    /// `analysisSilenceLimit`, and the run's next attempt reads on the new primary.
    @Test(.timeLimit(.minutes(4)))
    func anAnalysisReadingOnAConnectionToTheFrozenHostEnds() async throws {
        try await FrozenPrimaryPair.with(label: "frozen-failover-analysis") { pair in
            let configuration = Self.schedulerOnly(poolSize: 2)
            let sink = MemoryLogSink()
            try await pair.serving(configuration, logger: Logger(label: "frozen-analysis", level: .debug, sink: sink)) { engage in
                let primary = pair.primary.configuration(database: pair.databaseName)
                try await pair.waitFor("both of the pool's connections to lead to the primary") {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<2 {
                            group.addTask { try await engage.pool.withConnection { _ = try $0.query("SELECT pg_sleep(0.2)") } }
                        }
                        try await group.waitForAll()
                    }
                    return try Self.clientBackends(on: primary) >= 2
                }
                try await Self.failOverAndExpectDueRunsDone(pair, sink: sink)
            }
        }
    }

    /// `/readyz` says ready again once the new primary takes writes, although each new connection
    /// first spends its connect timeout on the frozen host listed first.
    @Test(.timeLimit(.minutes(3)))
    func readinessReturnsOnceTheNewPrimaryTakesWrites() async throws {
        try await FrozenPrimaryPair.with(label: "frozen-failover-ready") { pair in
            let logger = Logger(label: "frozen-failover", level: .warning, sink: MemoryLogSink())
            try await pair.serving(.requestsOnly(poolSize: 2), logger: logger) { engage in
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

                try await pair.freezePrimaryAndPromoteStandby()
                // Writes succeed on the new primary...
                try await pair.waitFor("an event to be acknowledged on the new primary") { try await ingest("after-\(UUID())") == 200 }
                // ...so readiness must say so.
                var statuses: [Int] = []
                do {
                    try await pair.waitFor("/readyz to answer 200", timeout: .seconds(30)) {
                        let status = try await readiness()
                        statuses.append(status)
                        return status == 200
                    }
                } catch {
                    Issue.record("\(error): /readyz answered \(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count)) while writes succeeded")
                }
            }
        }
    }

    /// A server with the scheduler and no projector, polling every 200 ms, its own calls and each
    /// read of an analysis bounded by 5 s: shorter than the defaults so that the tests are quick
    /// (any bound shows the fault).
    static func schedulerOnly(poolSize: Int) -> EngageServer.Configuration {
        var configuration = EngageServer.Configuration()
        configuration.http.port = 0
        configuration.poolSize = poolSize
        configuration.runProjector = false
        configuration.scheduler.pollInterval = .milliseconds(200)
        configuration.scheduler.databaseAnswerLimit = .seconds(5)
        configuration.scheduler.analysisSilenceLimit = .seconds(5)
        return configuration
    }

    /// Sessions of clients (the server's pool) on the test's database, besides the one asking.
    static func clientBackends(on database: PostgresConfiguration) throws -> Int {
        try count("""
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
            """, on: database)
    }

    /// Freezes the primary and promotes the standby, starts two experiments with a run due on the
    /// new primary, and expects both runs done there within 90 s (else records them and the
    /// server's last log lines).
    static func failOverAndExpectDueRunsDone(_ pair: FrozenPrimaryPair, sink: MemoryLogSink) async throws {
        try await pair.freezePrimaryAndPromoteStandby()
        let newPrimary = ConnectionPool(configuration: pair.standby.configuration(database: pair.databaseName), size: 1)
        try await ScheduledRuns.startExperiments(2, pool: newPrimary, prefix: "after-failover")
        do {
            try await ScheduledRuns.waitUntilAllDone(newPrimary, experiments: 2, prefix: "after-failover", timeout: .seconds(90))
        } catch {
            let runs = try await newPrimary.withConnection { connection in
                try connection.query("SELECT experiment_id || ' ' || status || ' ' || attempts FROM experiment_runs ORDER BY id")
                    .rows.map { try $0.decode(0, as: String.self) }
            }
            Issue.record("\(error); runs on the new primary: \(runs); the server's last log lines:\n\(sink.lines.suffix(15).joined(separator: "\n"))")
        }
        await newPrimary.close()
    }

    static func count(_ query: SQL, on database: PostgresConfiguration) throws -> Int {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        return try connection.query(query)[0].decode(0)
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
}
