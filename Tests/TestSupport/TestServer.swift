import EngageAPI
import EventStore
import Foundation
import HTTPServer
import Postgres
import Runtime

/// A real engage server on a loopback port of its own, over a fresh migrated database.
public final class TestServer: LoopbackServer {
    public let engage: EngageServer
    public let database: PostgresConfiguration
    public let logSink = MemoryLogSink()
    private let task: Task<Void, Error>

    public var port: Int { engage.port }
    public var keys: KeyStore { engage.keys }
    public var store: EventStore { engage.store }
    public var pool: ConnectionPool { engage.pool }

    public convenience init(configure: (inout EngageServer.Configuration) -> Void = { _ in }) throws {
        try self.init(database: try TestPostgres.freshDatabase(), configure: configure)
    }

    /// Over `database` (migrated), e.g. a fresh one reached as a role of the test's own.
    public init(database: PostgresConfiguration, configure: (inout EngageServer.Configuration) -> Void = { _ in }) throws {
        self.database = database
        var configuration = EngageServer.Configuration()
        configuration.http.port = 0
        configuration.poolSize = 4
        configure(&configuration)
        let logger = Logger(label: "test", level: .debug, sink: logSink)
        let engage = try EngageServer(configuration: configuration, database: database, logger: logger)
        self.engage = engage
        // Cancelled in `stop()`; the server's services run as children of this one task.
        task = Task { try await engage.run() }
    }

    public func stop() async {
        task.cancel()
        _ = try? await task.value
        await engage.pool.close()
    }

    /// A new key's secret.
    public func key(app: String = "app-1", role: Role = .ingest) async throws -> String {
        try await keys.create(app: app, role: role).secret
    }

    public func count(_ sql: SQL) async throws -> Int {
        try await pool.withConnection { try $0.query(sql)[0].decode(0, as: Int.self) }
    }
}
