import EngageAPI
import Experiments
import HTTPServer
import Postgres
import Runtime

/// engage's routes, wired as `EngageServer` wires them, on the real HTTP server on a loopback
/// port, with no database: keys and accepted events are kept in memory and time moves by hand.
/// Routes that read reports or experiments get a connection pool that reaches no server, so they
/// answer 503 once a request gets past authentication.
public final class RouteTestServer: LoopbackServer {
    public let keys = InMemoryKeys()
    public let events = InMemoryEventLog()
    public let time = ManualTime()
    public let logSink = MemoryLogSink()
    public let registry = MetricsRegistry()
    public let server: HTTPServer
    /// Every route served, as method and pattern (`/v1/experiments/:id`).
    public let routes: [Router.Pattern]
    private let pool: ConnectionPool
    private let task: Task<Void, Error>

    public var port: Int { server.port }

    /// Nowhere: a Unix socket directory that does not exist, so a connection fails at once.
    static let noDatabase = PostgresConfiguration(connectionString: "host=/nonexistent/engage-route-tests dbname=none user=none",
                                                  connectTimeoutSeconds: 1)

    public init(configure: (inout EngageServer.Configuration) -> Void = { _ in }) throws {
        var configuration = EngageServer.Configuration()
        configuration.http.port = 0
        configuration.time = time
        configure(&configuration)
        let logger = Logger(label: "test", level: .debug, sink: logSink)
        pool = ConnectionPool(configuration: Self.noDatabase, size: 1)
        let scheduler = Scheduler(pool: pool, configuration: configuration.scheduler, time: configuration.time, logger: logger)
        let api = try EngageServer.api(configuration, keys: keys, appender: events, metrics: IngestMetrics(registry: registry),
                                       pool: pool, scheduler: scheduler, registry: registry)
        routes = api.router.patterns
        let server = try EngageServer.httpServer(serving: api, configuration, registry: registry, logger: logger)
        self.server = server
        task = Task { try await server.run() }
    }

    public func stop() async {
        task.cancel()
        _ = try? await task.value
        await pool.close()
    }
}
