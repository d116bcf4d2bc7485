import EngageAPI
import EventStore
import Foundation
import HTTPServer
import Postgres
import Runtime

/// A real engage server on a loopback port of its own, over a fresh migrated database.
public final class TestServer: Sendable {
    public let engage: EngageServer
    public let database: PostgresConfiguration
    public let logSink = MemoryLogSink()
    private let task: Task<Void, Error>

    public var port: Int { engage.port }
    public var keys: KeyStore { engage.keys }
    public var store: EventStore { engage.store }
    public var pool: ConnectionPool { engage.pool }

    public init(configure: (inout EngageServer.Configuration) -> Void = { _ in }) throws {
        database = try TestPostgres.freshDatabase()
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

    /// Stops the server gracefully and waits for it.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
        await engage.pool.close()
    }

    /// A new key's secret.
    public func key(app: String = "app-1", role: Role = .ingest) async throws -> String {
        try await keys.create(app: app, role: role).secret
    }

    /// Sends one request on a fresh connection, off the cooperative pool.
    public func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []) async throws -> RawHTTPClient.Response {
        let port = self.port
        return try await offPool {
            let client = try RawHTTPClient(port: port)
            return try client.request(method, target, headers: headers, body: body)
        }
    }

    /// POSTs events with a key.
    public func post(_ body: String, key: String, contentType: String = "application/json", extraHeaders: [(String, String)] = []) async throws -> RawHTTPClient.Response {
        try await request("POST", "/v1/events",
                          headers: [("Authorization", "Bearer \(key)"), ("Content-Type", contentType)] + extraHeaders,
                          body: Array(body.utf8))
    }

    public func count(_ sql: SQL) async throws -> Int {
        try await pool.withConnection { try $0.query(sql)[0].decode(0, as: Int.self) }
    }
}
