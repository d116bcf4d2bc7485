import EmbeddedPostgres
@testable import EngageAPI
import HTTPServer
import EngageCore
import EventStore
import Foundation
import Postgres
import Projections
import Runtime
import Testing
import TestSupport

/// engage's readers on a streaming replica (`pg_basebackup -R` of a primary, `StreamingReplication`,
/// a pair of this suite's own since it stops the standby and pauses its replay): `engage serve`'s
/// report, replay and analysis routes, `engage report`, `experiment simulate` and `experiment run`
/// with `--read-database` read there and say so, and fall back to the primary, saying why, when
/// the standby is gone or behind.
@Suite("Faults: reading on a streaming replica", .serialized)
struct ReadReplicaTests {
    static let pair = Result { try StreamingReplication(label: "fault") }
    static let app = "replica-app"

    /// A URL naming the standby first and the primary second, without `target_session_attrs`
    /// (after a failover the old primary comes back as a standby, wherever the URL lists it):
    /// engage's connection is the primary's, where libpq's own default would take the first host
    /// that answers, and every append would fail there.
    @Test(.timeLimit(.minutes(2)))
    func aURLListingTheStandbyFirstConnectsToThePrimary() async throws {
        let replication = try await offPool { try Self.pair.get() }
        if (try? replication.withReplica { _ in true }) == nil { try await offPool { try replication.startReplica() } }
        let (primary, replica) = (replication.primary, replication.replica)
        let standbyFirst = PostgresConfiguration(connectionString: "host=\(replica.socketDirectory),\(primary.socketDirectory) "
            + "port=\(replica.options.port),\(primary.options.port) user=\(EmbeddedPostgres.superuser) dbname=postgres")
        let inRecovery = try await offPool {
            let connection = try Connection(configuration: standbyFirst)
            defer { connection.close() }
            return try connection.query("SELECT pg_is_in_recovery()")[0].decode(0, as: Bool.self)
        }
        #expect(inRecovery == false)
        // The first host is the standby indeed.
        #expect(try await offPool { try replication.withReplica { try $0.query("SELECT pg_is_in_recovery()")[0].decode(0, as: Bool.self) } })
    }

    /// `/readyz` on a standby (a demoted primary the pool reached again): every read it makes
    /// answers, and still it says not ready, since no event could be stored there.
    @Test(.timeLimit(.minutes(2)))
    func readinessOnAStandbySaysItTakesNoWrites() async throws {
        let replication = try await offPool { try Self.pair.get() }
        if (try? replication.withReplica { _ in true }) == nil { try await offPool { try replication.startReplica() } }
        let (_, replica) = try await offPool { try replication.freshDatabase() }
        try await offPool { try replication.waitForReplay() }
        let pool = ConnectionPool(configuration: replica, size: 1)
        let routes = HealthRoutes(pool: pool, migrator: try Migrator.fromSQLDirectory(), registry: MetricsRegistry())
        let response = await routes.readyz(HTTPRequest(method: .GET, path: "/readyz"))
        #expect(response.status == 503)
        let problem = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(problem?["type"] as? String == "https://engage.dev/problems/database-read-only")
        // The type's one title, whichever way the server takes no writes (RFC 9457).
        #expect(problem?["title"] as? String == "The database takes no writes")
        await pool.close()
    }

    @Test(.timeLimit(.minutes(4)))
    func engageServeReadsOnTheReplicaAndOnThePrimaryWhileTheReplicaIsGone() async throws {
        let replication = try await offPool { try Self.pair.get() }
        let (primary, replica) = try await offPool { try replication.freshDatabase() }
        let workspace = try FaultWorkspace("replica-serve")
        defer { workspace.remove() }
        let pool = ConnectionPool(configuration: primary, size: 2)
        let keys = KeyStore(pool: pool)
        let reader = try await keys.create(app: Self.app, role: .read).secret
        let admin = try await keys.create(app: ScheduledRuns.app, role: .admin).secret
        try await Self.simulate(primary, seed: 1, in: workspace)
        let (server, port) = try await EngageProcess.readyServer(
            database: primary, projector: true, options: ["--read-database", replica.connectionString], workspace: workspace, name: "serve")
        try await Self.waitForTheProjector(pool)
        try await offPool { try replication.waitForReplay() }

        let report = try await Self.get("/v1/report", key: reader, port: port)
        Self.expectReadOnTheReplica(report.readFrom)
        // What the replica answered is what the primary holds.
        let onPrimary = try await Self.reportOnPrimary(pool)
        #expect(report.json["total"] as? NSDictionary == onPrimary["total"] as? NSDictionary)

        let replay = try await Self.get("/v1/simulate?strategy=thumbnail", key: reader, port: port)
        #expect(replay.readFrom["database"] as? String == "replica")

        try await ScheduledRuns.startExperiments(1, pool: pool, prefix: "replica-serve")
        let run = try await offPool {
            try RawHTTPClient(port: port).request("POST", "/v1/experiments/replica-serve-0/run", headers: [("Authorization", "Bearer \(admin)")])
        }
        #expect(run.status == 201, "\(run.text)")
        let result = try #require((try JSONSerialization.jsonObject(with: Data(run.body)) as? [String: Any])?["result"] as? [String: Any])
        #expect((result["read_from"] as? [String: Any])?["database"] as? String == "replica", "\(result.keys.sorted())")
        // Stored on the primary, with where it was read.
        let stored = try await pool.withConnection { connection in
            try connection.query("SELECT result->'read_from'->>'database' FROM experiment_runs WHERE experiment_id = 'replica-serve-0'")[0]
                .decode(0, as: String.self)
        }
        #expect(stored == "replica")

        try await offPool { try replication.stopReplica() }
        defer { try? replication.startReplica() }
        let fellBack = try await Self.get("/v1/report", key: reader, port: port)
        #expect(fellBack.readFrom == ["database": "primary", "lag_seconds": 0, "fallback": "replica_unreachable"] as NSDictionary)
        #expect(fellBack.json["total"] as? NSDictionary == onPrimary["total"] as? NSDictionary)
        let fallbacks = try await EngageProcess.metric(#"engage_read_replica_fallbacks_total{reason="replica_unreachable"}"#, port: port)
        #expect((fallbacks ?? 0) >= 1)
        #expect(server.log.contains("read-replica.fallback") && server.log.contains("reason=replica_unreachable"))
        #expect(try await server.terminate() == 0)
        await pool.close()
    }

    @Test(.timeLimit(.minutes(4)))
    func commandsReadOnTheReplicaAndSaySoAndFallBackWhenItLags() async throws {
        let replication = try await offPool { try Self.pair.get() }
        let (primary, replica) = try await offPool { try replication.freshDatabase() }
        let workspace = try FaultWorkspace("replica-cli")
        defer { workspace.remove() }
        let pool = ConnectionPool(configuration: primary, size: 2)
        try await Self.simulate(primary, seed: 2, in: workspace)
        #expect(try await Self.engage(["projections", "rebuild", "engagement"], primary, in: workspace).status == 0)
        try await ScheduledRuns.startExperiments(1, pool: pool, prefix: "replica-cli")
        try await offPool { try replication.waitForReplay() }
        let onReplica = ["--read-database", replica.connectionString]

        let json = try await Self.engage(["report", "--format", "json", "--app", Self.app] + onReplica, primary, in: workspace)
        #expect(json.status == 0, "\(json.output)")
        let report = try Self.object(json.output)
        Self.expectReadOnTheReplica(report["read_from"] as? NSDictionary ?? [:])
        #expect(report["total"] as? NSDictionary == (try await Self.reportOnPrimary(pool))["total"] as? NSDictionary)
        // Without a replica: the primary, and no line added to what people read.
        let plain = try await Self.engage(["report", "--format", "json", "--app", Self.app], primary, in: workspace)
        #expect(try Self.object(plain.output)["read_from"] as? NSDictionary
                == ["database": "primary", "lag_seconds": 0, "fallback": NSNull()] as NSDictionary)
        let table = try await Self.engage(["report", "--app", Self.app] + onReplica, primary, in: workspace)
        let lastLine = table.output.split(separator: "\n").last.map(String.init) ?? ""
        #expect(lastLine.wholeMatch(of: #/Read from the read replica, [0-9]+\.[0-9]{3} s behind the primary when read\./#) != nil,
                "\(table.output.suffix(300))")
        #expect(!(try await Self.engage(["report", "--app", Self.app], primary, in: workspace)).output.contains("Read from"))

        let simulate = try await Self.engage(["experiment", "simulate", "--app", Self.app, "--strategy", "full", "--format", "json"] + onReplica,
                                             primary, in: workspace)
        #expect((try Self.object(simulate.output)["read_from"] as? [String: Any])?["database"] as? String == "replica", "\(simulate.output.prefix(300))")
        let run = try await Self.engage(["experiment", "run", "replica-cli-0"] + onReplica, primary, in: workspace)
        #expect(run.status == 0, "\(run.output)")
        #expect((try Self.object(run.output)["read_from"] as? [String: Any])?["database"] as? String == "replica")

        // The standby falls behind by more than --read-max-lag: the primary is read, with a warning.
        try await offPool { try replication.pauseReplay() }
        defer { try? replication.resumeReplay() }
        try await Self.simulate(primary, seed: 3, in: workspace)
        try await offPool { try replication.waitUntilBehind() }
        try await pollUntil(every: .milliseconds(100)) {
            try await ConnectionPool(configuration: replica, size: 1).withConnection { try ReplicaLag.measure(on: $0) }
                .map { $0 > .seconds(1) } ?? true
        }
        let lagging = try await Self.engage(["report", "--format", "json", "--app", Self.app, "--read-max-lag", "1"] + onReplica,
                                            primary, in: workspace)
        #expect(lagging.status == 0)
        #expect(try Self.object(lagging.output)["read_from"] as? NSDictionary
                == ["database": "primary", "lag_seconds": 0, "fallback": "replica_lagging"] as NSDictionary)
        #expect(lagging.output.contains("read-replica.fallback") && lagging.output.contains("reason=replica_lagging"), "\(lagging.output.prefix(500))")
        await pool.close()
    }

    // MARK: Helpers

    /// Read on the replica, with a lag within the default bound (a standby that has replayed all
    /// it received says 0; one that is replaying says how long ago its last replayed commit was).
    static func expectReadOnTheReplica(_ readFrom: NSDictionary, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(readFrom["database"] as? String == "replica", "\(readFrom)", sourceLocation: sourceLocation)
        #expect(readFrom["fallback"] is NSNull, sourceLocation: sourceLocation)
        let lag = (readFrom["lag_seconds"] as? NSNumber)?.doubleValue ?? -1
        #expect(lag >= 0 && lag <= 60, "\(readFrom)", sourceLocation: sourceLocation)
    }

    /// `engage` with `--database` naming `database`.
    static func engage(_ arguments: [String], _ database: PostgresConfiguration,
                       in workspace: FaultWorkspace) async throws -> (status: Int32, output: String) {
        try await CommandLineOptionsTests.engage(arguments + ["--database", database.connectionString], in: workspace)
    }

    /// A few hundred simulated notifications of the app, appended straight to the log.
    static func simulate(_ database: PostgresConfiguration, seed: Int, in workspace: FaultWorkspace) async throws {
        let outcome = try await engage(["simulate", "--direct", "--app", app, "--notifications", "300", "--devices", "60", "--seed", String(seed)],
                                       database, in: workspace)
        guard outcome.status == 0 else { throw FaultTestError("engage simulate failed", log: outcome.output) }
    }

    /// The JSON object of a command's output (a warning line of its logger may come first).
    static func object(_ output: String) throws -> [String: Any] {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("{") }),
              let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw FaultTestError("no JSON object in: \(output.prefix(500))")
        }
        return object
    }

    static func get(_ path: String, key: String, port: Int) async throws -> (json: [String: Any], readFrom: NSDictionary) {
        let response = try await offPool { try RawHTTPClient(port: port).request("GET", path, headers: [("Authorization", "Bearer \(key)")]) }
        guard response.status == 200, let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw FaultTestError("GET \(path): \(response.status) \(response.text.prefix(300))")
        }
        return (json, (json["read_from"] as? NSDictionary) ?? [:])
    }

    /// The app's report read on the primary.
    static func reportOnPrimary(_ pool: ConnectionPool) async throws -> [String: Any] {
        let report = try await ReportQuery(appID: app).run(on: pool, now: SystemTime().wallClock)
        return try JSONSerialization.jsonObject(with: Data(report.renderJSON())) as? [String: Any] ?? [:]
    }

    /// Waits until the projector has folded every event of the log.
    static func waitForTheProjector(_ pool: ConnectionPool) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            let done = try await pool.withConnection { connection in
                try connection.query("""
                    SELECT coalesce((SELECT events_processed FROM projection_checkpoints WHERE projection = \(EngagementStore.projectionName)), 0)
                           = (SELECT count(*) FROM events)
                    """)[0].decode(0, as: Bool.self)
            }
            if done { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw FaultTestError("the projector did not fold the log within 120 s")
    }
}
