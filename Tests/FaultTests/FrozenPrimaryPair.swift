import EmbeddedPostgres
import EngageAPI
import Foundation
import Glibc
import Postgres
import Runtime
import Testing
import TestSupport

/// A streaming pair of its own (`StreamingReplication`) with a fresh database, for a test that
/// freezes the primary (every process stopped with SIGSTOP) and promotes the standby, while
/// `engage serve` runs on both hosts (`target_session_attrs=read-write`, as it is deployed there).
final class FrozenPrimaryPair {
    let primary: EmbeddedPostgres
    let standby: EmbeddedPostgres
    /// The fresh database's name, the same on both hosts.
    let databaseName: String
    /// Both hosts, the primary first: a connection goes to whichever takes writes.
    let bothHosts: PostgresConfiguration
    /// The primary's processes `freezePrimaryAndPromoteStandby` stopped.
    private(set) var frozen: [Int32] = []

    private init(_ replication: StreamingReplication) throws {
        let (database, _) = try replication.freshDatabase()
        (primary, standby) = (replication.primary, replication.replica)
        databaseName = try Self.databaseName(database)
        bothHosts = PostgresConfiguration(connectionString: """
            host='\(primary.socketDirectory),\(standby.socketDirectory)' port=\(primary.options.port),\(standby.options.port) \
            user='\(EmbeddedPostgres.superuser)' dbname='\(databaseName)' target_session_attrs=read-write
            """)
    }

    /// Builds the pair (`label` keeps its directory apart) and runs `body` with it; then lets the
    /// frozen processes go on (processes stopped with SIGSTOP ignore a stop) and stops the old
    /// primary, however `body` ended.
    static func with(label: String, _ body: (FrozenPrimaryPair) async throws -> Void) async throws {
        let pair = try FrozenPrimaryPair(StreamingReplication(label: label))
        defer {
            for pid in pair.frozen { Glibc.kill(pid, SIGCONT) }
            try? pair.primary.stop(mode: "immediate")
        }
        try await body(pair)
    }

    /// Runs `engage serve` in this process on both hosts for `body`. Once `body` is done, checks
    /// that no process of the frozen primary ran meanwhile (one that did would void the test), and
    /// stops the server.
    func serving(_ configuration: EngageServer.Configuration, logger: Logger,
                 sourceLocation: SourceLocation = #_sourceLocation,
                 _ body: (EngageServer) async throws -> Void) async throws {
        let engage = try EngageServer(configuration: configuration, database: bothHosts, logger: logger)
        let serving = Task { try await engage.run() }
        defer { serving.cancel() }
        try await body(engage)
        let running = frozen.filter { !ProcessTreeFreeze.cannotRun($0) }
        #expect(running.isEmpty, "processes of the frozen primary ran: \(running.map(LocalSystem.describe))",
                sourceLocation: sourceLocation)
        serving.cancel()
        _ = try? await serving.value
        await engage.closePools()
    }

    /// The failover: stops every process of the primary, then promotes the standby
    /// (`pg_promote`), waiting until it accepts writes.
    func freezePrimaryAndPromoteStandby() async throws {
        var freeze = ProcessTreeFreeze(root: try primary.postmasterPID())
        // Recorded even if the wait gives up, so that `with` lets the ones stopped so far go on.
        defer { frozen = Array(freeze.signalled) }
        try await waitFor("every process of the primary to stop") { freeze.step() }
        let connection = try Connection(configuration: standby.configuration(database: "postgres"))
        defer { connection.close() }
        guard try connection.query("SELECT pg_promote(true, 60)")[0].decode(0, as: Bool.self) else {
            throw FaultTestError("the standby was not promoted within 60 s")
        }
    }

    func waitFor(_ what: String, timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while (try? await condition()) != true {
            guard ContinuousClock.now < deadline else { throw FaultTestError("no \(what) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    private static func databaseName(_ configuration: PostgresConfiguration) throws -> String {
        guard let range = configuration.connectionString.range(of: "dbname='") else { throw FaultTestError("no dbname in \(configuration)") }
        return String(configuration.connectionString[range.upperBound...].prefix { $0 != "'" })
    }
}
