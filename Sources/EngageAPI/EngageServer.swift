import EngageCore
import EventStore
import Experiments
import HTTPServer
import Postgres
import Projections
import Runtime

/// engage's long-lived parts wired together: connection pool, event store, keys, the group
/// commit queue and its committers, the projector, the experiment
/// scheduler and the HTTP server.
///
/// `api(_:keys:appender:...)` and `httpServer(serving:...)` are the same wiring with the key lookup
/// and the append seam passed in: route tests serve them with keys and events in memory.
public struct EngageServer: Sendable {
    public struct Configuration: Sendable {
        /// Address, threads, connection limits and timeouts; `maxBodyBytes` follows `ingest`.
        /// Behind a proxy every client shares the proxy's address (`maxConnectionsPerAddress`).
        public var http: HTTPServer.Configuration = {
            var http = HTTPServer.Configuration()
            http.port = 8080
            return http
        }()
        /// Requests per API key, per process; nil for no limit.
        public var rateLimit: RateLimit?
        /// The one time every part reads (rate limiter, key cache, group commit, `occurred_at`
        /// checks, scheduler); tests move it by hand. Not the projector's: it paces its reads on
        /// the system's time, or a test that moves this time would have to move it for every fold.
        public var time: any TimeSource = SystemTime()
        public var poolSize = 8
        public var committers = 2
        public var queueCapacity = 50_000
        /// Events waiting before a commit starts beside a running one (see `IngestQueue`).
        public var parallelCommitEvents = 100
        /// How long a request may wait for its group commit before the commit is interrupted (or
        /// the request, still queued, refused) and it is answered 503 (see `Committer`): shorter
        /// than clients' own timeouts and longer than any healthy commit. At shutdown a request
        /// waits at most the HTTP grace (answered 503, `BatchAppending.submit`), whatever this is. An
        /// experiment's create, start or stop (API and console) takes at most as long once it has
        /// its connection (`ExperimentStore.commitTimeout`).
        public var commitTimeout = Duration.seconds(10)
        /// The fewest synchronous standbys that must have a commit before its events are
        /// acknowledged, whatever the primary's `synchronous_standby_names` says
        /// (`PostgresConfiguration.requiredSynchronousStandbys`, which it raises on every connection
        /// of the server, never lowers); 0 trusts the setting.
        public var requiredSynchronousStandbys = 0
        /// A read replica for what only reads (reports, analysis and strategy replays), nil for none.
        public var readDatabase: PostgresConfiguration?
        /// Connections to the read replica.
        public var readPoolSize = 4
        /// When the replica is not read (see `ReadDatabase`).
        public var readReplica = ReadDatabase.Configuration()
        public var ingest = IngestRoute.Configuration()
        public var keyCacheLifetime = Duration.seconds(5)
        /// Run the engagement projector in this process (one process is active; others stand by).
        public var runProjector = true
        public var projector = Projector.Configuration()
        /// Run the experiment scheduler in this process (any number of processes may).
        public var runScheduler = true
        public var scheduler = Scheduler.Configuration()
        /// Serve the web console at `/` and under `/console/` (its cookies are `Secure` under TLS).
        public var console = true

        public init() {}
    }

    public let pool: ConnectionPool
    /// Where reads go: `pool`, or the read replica's pool when one is configured and usable.
    public let reads: ReadDatabase
    public let server: HTTPServer
    public let store: EventStore
    public let keys: KeyStore
    public let registry: MetricsRegistry
    public let services: [(name: String, service: any Service)]
    /// Every route served, as method and pattern (`/v1/experiments/:id`).
    public let routes: [Router.Pattern]
    let logger: Logger

    public init(configuration: Configuration, database: PostgresConfiguration, logger: Logger,
                registry: MetricsRegistry = MetricsRegistry()) throws {
        self.logger = logger
        self.registry = registry
        let time = configuration.time
        var database = database
        // The higher of the two: the option's default (0) must not lower a floor the caller set
        // on the database's configuration, where the check reads it.
        database.requiredSynchronousStandbys = max(database.requiredSynchronousStandbys, configuration.requiredSynchronousStandbys)
        let pool = ConnectionPool(configuration: database, size: configuration.poolSize)
        self.pool = pool
        store = EventStore(pool: pool)
        keys = KeyStore(pool: pool, cacheLifetime: configuration.keyCacheLifetime, time: time)
        let queue = IngestQueue(limits: .init(capacity: configuration.queueCapacity, maxGroupEvents: 10_000,
                                              parallelCommitEvents: configuration.parallelCommitEvents),
                                time: time)
        let metrics = IngestMetrics(registry: registry)
        let committer = Committer(queue: queue, database: database, metrics: CommitterMetrics(registry: registry),
                                  committers: configuration.committers, commitTimeout: configuration.commitTimeout, time: time,
                                  logger: logger)
        registry.gauge("engage_ingest_queue_events", help: "Events waiting for group commit.") { Double(queue.depth) }
        registry.gauge("engage_postgres_pool_in_use", help: "Pooled PostgreSQL connections in use (the committers' own not counted).") { Double(pool.statistics.inUse) }
        registry.gauge("engage_postgres_pool_waiting", help: "Tasks waiting for a PostgreSQL connection.") { Double(pool.statistics.waiting) }

        let reads = ReadDatabase(primary: pool,
                                 replica: configuration.readDatabase.map { ConnectionPool(configuration: $0, size: configuration.readPoolSize) },
                                 configuration: configuration.readReplica, time: time, logger: logger,
                                 // No replica, no replica series (rather than a lag that reads "in sync").
                                 metrics: configuration.readDatabase == nil ? nil : ReadReplicaMetrics(registry: registry))
        self.reads = reads
        let scheduler = Scheduler(pool: pool, reads: reads, configuration: configuration.scheduler, time: time, logger: logger,
                                  metrics: SchedulerMetrics(registry: registry))
        let api = try Self.api(configuration, keys: keys, appender: queue, metrics: metrics, pool: pool, reads: reads,
                               scheduler: scheduler, registry: registry)
        routes = api.router.patterns
        let server = try Self.httpServer(serving: api, configuration, registry: registry, logger: logger)
        self.server = server
        // Shut down in reverse: HTTP first (finishing in-flight requests), then the committers.
        var services: [(name: String, service: any Service)] = [
            ("log-partitions", EventPartitionMaintenance(pool: pool, logger: logger)),
            ("ingest-window", IngestWindowRecorder(pool: pool, limits: configuration.ingest.limits.event, logger: logger)),
            ("committer", committer),
            ("ingest-summary", IngestSummary(metrics: metrics, queue: queue, logger: logger)),
        ]
        if configuration.runProjector {
            services.append(("projector", Projector(pool: pool, configuration: configuration.projector, logger: logger,
                                                    metrics: ProjectorMetrics(registry: registry))))
        }
        if configuration.runScheduler {
            services.append(("scheduler", scheduler))
        }
        if let console = api.console {
            services.append(("console-rates", console.sampler))
        }
        if let tls = configuration.http.tls {
            services.append(("tls-reload", CertificateReloader(credentials: tls, logger: logger, registry: registry)))
        }
        services.append(("http", server))
        self.services = services
    }

    /// Every route, deciding with `keys` who may do what and handing accepted events to
    /// `appender`; the routes of experiments use `pool`, reports and replays read on `reads`
    /// (`pool` alone when nil).
    public static func api(_ configuration: Configuration, keys: any KeyLookup, appender: any BatchAppending,
                           metrics: IngestMetrics, pool: ConnectionPool, reads: ReadDatabase? = nil, scheduler: Scheduler,
                           registry: MetricsRegistry) throws -> EngageAPI {
        let reads = reads ?? ReadDatabase(primary: pool)
        let time = configuration.time
        let authenticator = Authenticator(keys: keys, rateLimiter: configuration.rateLimit.map {
            KeyRateLimiter(limit: $0, time: time)
        })
        // The API's and the console's experiment changes, bounded as a request's commit is.
        let experiments = ExperimentStore(pool: pool, time: time, commitTimeout: configuration.commitTimeout)
        let console = configuration.console ? ConsoleRoutes(
            authenticator: authenticator, reads: .on(pool, now: { time.wallClock }), store: experiments,
            registry: registry, sampler: IngestionRateSampler(metrics: metrics, time: time),
            configuration: ConsoleRoutes.Configuration(secureCookies: configuration.http.tls != nil), time: time) : nil
        return EngageAPI(
            ingest: IngestRoute(authenticator: authenticator, appender: appender, configuration: configuration.ingest,
                                metrics: metrics, time: time),
            report: ReportRoute(authenticator: authenticator, reads: reads, time: time),
            health: HealthRoutes(pool: pool, migrator: try Migrator.fromSQLDirectory(), registry: registry),
            experiments: ExperimentRoutes(authenticator: authenticator, store: experiments,
                                          scheduler: scheduler, deviceIDHasher: configuration.ingest.deviceIDHasher, time: time),
            simulate: StrategyReplayRoute(authenticator: authenticator, reads: reads, time: time), console: console)
    }

    /// The HTTP server of `api`, with the transport limits of `configuration`, every response
    /// counted in `registry` and libmicrohttpd's own messages logged as warnings.
    public static func httpServer(serving api: EngageAPI, _ configuration: Configuration, registry: MetricsRegistry,
                                  logger: Logger) throws -> HTTPServer {
        var http = configuration.http
        // A gzip body is never much larger than the decompressed limit it must respect.
        http.maxBodyBytes = configuration.ingest.maxDecompressedBytes + 64 * 1024
        let responder = MeteredResponder(api.router, routes: EngageAPI.meteredRoutes, registry: registry, logger: logger)
        let server = try HTTPServer(configuration: http, responder: responder, daemonLog: { message in
            logger.warning("http.daemon", ["message": message])
        })
        registry.counter("engage_http_requests_inline_total",
                         help: "Requests answered without a task, on the HTTP thread that read them (small ingest requests with a cached key).") {
            [weak server] in server?.statistics.requestsTakenInline ?? 0
        }
        registry.gauge("engage_http_connections_open", help: "HTTP connections open, busy or idle (see --http-event-loop).") {
            [weak server] in Double(server?.statistics.connectionsOpen ?? 0)
        }
        registry.gauge("engage_http_requests_in_flight",
                       help: "HTTP requests begun and not yet answered (an ingest request waits for its commit), this scrape's own included.") {
            [weak server] in Double(server?.statistics.requestsInFlight ?? 0)
        }
        return server
    }

    public var port: Int { server.port }

    /// Closes the connection pools, once `run()` has returned.
    public func closePools() async {
        await reads.closeReplica()
        await pool.close()
    }

    /// True when the web console is among the routes.
    public var consoleServed: Bool { routes.contains(where: EngageAPI.isConsole) }

    /// Serves until SIGTERM/SIGINT (or until the calling task is cancelled); `onShutdown` is
    /// called when the shutdown begins, before the HTTP server stops listening.
    public func run(onShutdown: @escaping @Sendable () -> Void = {}) async throws {
        try await ServiceGroup(services: services, logger: logger, onShutdown: onShutdown).run()
    }
}
