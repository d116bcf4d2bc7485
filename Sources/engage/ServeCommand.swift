import EngageAPI
import Foundation
import EngageCore
import HTTPServer
import Postgres
import Projections
import Runtime

/// `engage serve`: the ingestion API with group commit, health and metrics, until SIGTERM/SIGINT.
enum ServeCommand {
    static let definition = Command(
        name: "serve",
        abstract: "Run engage's HTTP API on the database (local unless --database) until SIGTERM or SIGINT.",
        options: CommonOptions.databaseAndLogging + ServerOptions.all + TLSOptions.all,
        flags: ServerOptions.flags,
        run: run)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.logger(arguments)
        let tls = try TLSOptions.credentials(arguments)
        try await ServerOptions.withServer(arguments, logger: logger, tls: tls) { engage, address, _ in
            logger.info("engage.listening", ["address": address])
            try await engage.run()
        }
        logger.info("engage.stopped")
    }
}

/// The options of the server (`engage serve`, `engage demo`), each with an ENGAGE_* environment
/// variable; their defaults are `EngageServer.Configuration`'s.
enum ServerOptions {
    private static let defaults = EngageServer.Configuration()
    private static let limits = defaults.ingest.limits.event

    static let listen = Option("listen", value: "address:port", help: "Numeric address and port to listen on ([::1]:8080 for IPv6).", environment: "ENGAGE_LISTEN",
                               default: ListenAddress(host: defaults.http.host, port: defaults.http.port))
    static let httpThreads = Option("http-threads", value: "n", help: "HTTP daemon threads.", environment: "ENGAGE_HTTP_THREADS",
                                    default: defaults.http.threading.threads, validate: .range(1...64))
    static let httpEventLoop = Option(
        "http-event-loop", value: "poll|epoll", help: "How HTTP threads wait: poll is cheaper per request, epoll per idle connection (docs/scaling.md).",
        environment: "ENGAGE_HTTP_EVENT_LOOP", default: defaults.http.eventLoop)
    static let maxConnections = Option("max-connections", value: "n", help: "Most concurrent HTTP connections.", environment: "ENGAGE_MAX_CONNECTIONS",
                                       default: defaults.http.maxConnections, validate: .range(1...100_000))
    static let maxConnectionsPerAddress = Option(
        "max-connections-per-address", value: "n", help: "Most concurrent HTTP connections from one client address; 0 for no limit.",
        environment: "ENGAGE_MAX_CONNECTIONS_PER_ADDRESS", default: defaults.http.maxConnectionsPerAddress, validate: .range(0...100_000))
    static let maxHeaderBytes = Option("max-header-bytes", value: "bytes", help: "Size of a request's headers; larger ones get 431.",
                                       environment: "ENGAGE_MAX_HEADER_BYTES", default: defaults.http.maxHeaderBytes, validate: .range(1024...1_048_576))
    static let requestTimeout = Option(
        "request-timeout", value: "seconds", help: "Time a connection has to deliver a whole request before it is closed.",
        environment: "ENGAGE_REQUEST_TIMEOUT", default: Int(defaults.http.requestTimeout.components.seconds), validate: .range(1...3600))
    static let idleTimeout = Option("idle-timeout", value: "seconds", help: "Time a silent connection stays open.", environment: "ENGAGE_IDLE_TIMEOUT",
                                    default: Int(defaults.http.connectionTimeout.components.seconds), validate: .range(1...3600))
    static let rateLimit = Option<(requests: Int, period: Duration)?>(
        "rate-limit", value: "requests/s", help: "Requests each API key may make per second (N/s) or minute (N/m) in this process, or off.",
        environment: "ENGAGE_RATE_LIMIT", default: nil, defaultText: "off", requirement: "expected N/s, N/m (N from 1 to 1000000) or off",
        parse: { text in text == "off" || text == "0" ? .some(nil) : RateLimit.parseRate(text).map { .some($0) } })
    static let rateBurst = Option<Int?>(
        "rate-burst", value: "requests", help: "Requests a key may make at once after a quiet spell (default: ten seconds' worth of the rate).",
        environment: "ENGAGE_RATE_BURST", validate: .range(1...10_000_000))
    static let hashDeviceIDs = Option(
        "hash-device-ids", value: "on|off", help: "Store HMAC-SHA256(salt, device_id) instead of device ids; assignments hash the same way.",
        environment: "ENGAGE_HASH_DEVICE_IDS", default: Switch(defaults.ingest.deviceIDHasher != nil))
    static let deviceIDSalt = Option<String?>(
        "device-id-salt", value: "secret", help: "The secret salt of --hash-device-ids, at least 16 bytes; prefer the environment variable.",
        environment: "ENGAGE_DEVICE_ID_SALT")
    static let poolSize = Option("pool-size", value: "n", help: "PostgreSQL connections, besides one per committer.", environment: "ENGAGE_POOL_SIZE",
                                 default: defaults.poolSize, validate: .range(2...200))
    static let committers = Option(
        "committers", value: "n", help: "Group-commit transactions in flight at once, each on a thread and connection of its own.",
        environment: "ENGAGE_COMMITTERS", default: defaults.committers, validate: .range(1...32))
    static let queueCapacity = Option("queue-capacity", value: "events", help: "Events waiting to be stored before requests get 429.",
                                      environment: "ENGAGE_QUEUE_CAPACITY", default: defaults.queueCapacity, validate: .range(1_000...10_000_000))
    static let parallelCommitEvents = Option(
        "parallel-commit-events", value: "events", help: "Events waiting before a commit starts while another is running (0: whenever a committer is free).",
        environment: "ENGAGE_PARALLEL_COMMIT_EVENTS", default: defaults.parallelCommitEvents, validate: .range(0...1_000_000))
    static let commitTimeout = Option(
        "commit-timeout", value: "seconds", help: "Time a request may wait for its group commit (a primary waiting for a lost standby) before it gets 503.",
        environment: "ENGAGE_COMMIT_TIMEOUT", default: Int(defaults.commitTimeout.components.seconds), validate: .range(1...3600))
    static let synchronousStandbys = Option(
        "synchronous-standbys", value: "n",
        help: "Synchronous standbys that must have a commit before its events are acknowledged, even when the primary's synchronous_standby_names asks for fewer (1 on a pg_auto_failover formation of three data nodes; on two, every node lost stops ingestion: docs/high-availability.md).",
        environment: "ENGAGE_SYNCHRONOUS_STANDBYS", default: defaults.requiredSynchronousStandbys, validate: .range(PostgresConfiguration.acceptedSynchronousStandbys))
    static let maxEvents = Option("max-events", value: "n", help: "Events per request.", environment: "ENGAGE_MAX_EVENTS",
                                  default: defaults.ingest.limits.maxEvents, validate: .range(1...100_000))
    static let maxBodyBytes = Option("max-body-bytes", value: "bytes", help: "Request body size after decompression.", environment: "ENGAGE_MAX_BODY_BYTES",
                                     default: defaults.ingest.maxDecompressedBytes, validate: .range(1024...(256 << 20)))
    static let maxEventBytes = Option("max-event-bytes", value: "bytes", help: "Size of one event.", environment: "ENGAGE_MAX_EVENT_BYTES",
                                      default: limits.maxEventBytes, validate: .range(256...EventLimits.largestMaxEventBytes))
    static let maxPastDays = Option("max-past-days", value: "days", help: "How old occurred_at may be.", environment: "ENGAGE_MAX_PAST_DAYS",
                                    default: Int(limits.maxPast.components.seconds / 86_400), validate: .range(1...3650))
    static let maxFutureMinutes = Option("max-future-minutes", value: "minutes", help: "How far ahead occurred_at may be.", environment: "ENGAGE_MAX_FUTURE_MINUTES",
                                         default: Int(limits.maxFuture.components.seconds / 60),
                                         validate: .range(0...Int(EventLimits.largestMaxFuture.components.seconds / 60)))
    static let projector = Option(
        "projector", value: "on|off", help: "Run the engagement projector in this process (one process is active, others stand by).",
        environment: "ENGAGE_PROJECTOR", default: Switch(defaults.runProjector))
    static let scheduler = Option(
        "scheduler", value: "on|off", help: "Run the experiment analysis scheduler in this process (runs are shared safely between processes).",
        environment: "ENGAGE_SCHEDULER", default: Switch(defaults.runScheduler))
    static let console = Option(
        "console", value: "on|off", help: "Serve the web console at / and under /console/ (signed in with a read or admin key).",
        environment: "ENGAGE_CONSOLE", default: Switch(defaults.console))

    static let all: [any CommandOption] = [
        listen, httpThreads, httpEventLoop, maxConnections, maxConnectionsPerAddress, maxHeaderBytes, requestTimeout, idleTimeout,
        rateLimit, rateBurst, hashDeviceIDs, deviceIDSalt, poolSize, committers, queueCapacity, parallelCommitEvents, commitTimeout,
        synchronousStandbys, maxEvents, maxBodyBytes, maxEventBytes, maxPastDays, maxFutureMinutes, projector, scheduler, console,
        SchedulerCommand.analysisSilence, ProjectCommand.readInterval,
    ] + ReadOptions.all

    /// The server's flags: the in-process scheduler's as `engage scheduler` declares them.
    static let flags = [SchedulerCommand.incrementalLooks]

    /// The server's configuration from the options; usage errors for what no single option shows.
    static func configuration(_ arguments: ParsedArguments) throws(UsageError) -> EngageServer.Configuration {
        var server = EngageServer.Configuration()
        server.http.host = arguments[listen].host
        server.http.port = arguments[listen].port
        server.http.threading = .threadPool(arguments[httpThreads])
        server.http.eventLoop = arguments[httpEventLoop]
        server.http.maxConnections = arguments[maxConnections]
        server.http.maxConnectionsPerAddress = arguments[maxConnectionsPerAddress]
        server.http.maxHeaderBytes = arguments[maxHeaderBytes]
        server.http.requestTimeout = .seconds(arguments[requestTimeout])
        server.http.connectionTimeout = .seconds(arguments[idleTimeout])
        server.rateLimit = arguments[rateLimit].map { rate in
            let tenSeconds = max(1, rate.requests * 10 / Int(rate.period.components.seconds))
            return RateLimit(requests: rate.requests, per: rate.period, burst: arguments[rateBurst] ?? tenSeconds)
        }
        server.poolSize = arguments[poolSize]
        server.committers = arguments[committers]
        // The local cluster allows 200 connections (and projector, scheduler and readers share the pool).
        guard server.poolSize + server.committers <= 200 else {
            throw arguments.usageError(
                .invalidValue,
                "options '\(poolSize.longName)' and '\(committers.longName)' open \(server.poolSize + server.committers) PostgreSQL connections together; at most 200")
        }
        server.queueCapacity = arguments[queueCapacity]
        server.parallelCommitEvents = arguments[parallelCommitEvents]
        server.commitTimeout = .seconds(arguments[commitTimeout])
        server.requiredSynchronousStandbys = arguments[synchronousStandbys]
        server.readDatabase = ReadOptions.replica(arguments)
        server.readReplica = ReadOptions.configuration(arguments)
        var limits = IngestLimits()
        limits.maxEvents = arguments[maxEvents]
        limits.event.maxEventBytes = arguments[maxEventBytes]
        limits.event.maxPast = .seconds(86_400 * arguments[maxPastDays])
        limits.event.maxFuture = .seconds(60 * arguments[maxFutureMinutes])
        server.ingest = IngestRoute.Configuration(limits: limits, maxDecompressedBytes: arguments[maxBodyBytes],
                                                  deviceIDHasher: try deviceIDHasher(arguments))
        server.runProjector = arguments[projector] == .on
        server.projector.readInterval = .milliseconds(arguments[ProjectCommand.readInterval])
        server.projector.failpoints = Failpoints.fromEnvironment()
        server.runScheduler = arguments[scheduler] == .on
        server.scheduler.incrementalLooks = arguments[SchedulerCommand.incrementalLooks]
        server.scheduler.analysisSilenceLimit = .seconds(arguments[SchedulerCommand.analysisSilence])
        server.console = arguments[console] == .on
        let failpoints = server.projector.failpoints
        server.scheduler.failpoint = { try failpoints.hit($0) }
        return server
    }

    /// Runs `body` with engage's server (not yet running, serving HTTPS when `tls` is given), its
    /// address and its database; closes the server's pool and the database after.
    static func withServer(_ arguments: ParsedArguments, logger: Logger, tls: TLSCredentials? = nil,
                           _ body: (EngageServer, _ address: String, DatabaseSetup) async throws -> Void) async throws {
        var configuration = try configuration(arguments)
        configuration.http.tls = tls
        let setup = try DatabaseSetup.open(arguments, logger: logger, requireTransactionIDsAhead: true)
        defer { setup.close() }
        let engage = try EngageServer(configuration: configuration, database: setup.configuration, logger: logger)
        do {
            // In brackets for IPv6 (`http://[::1]:8080`): the demo sends its traffic to this address.
            let authority = ListenAddress(host: configuration.http.host, port: engage.port).optionText
            try await body(engage, "\(tls == nil ? "http" : "https")://\(authority)", setup)
        } catch {
            await engage.closePools()
            throw error
        }
        await engage.closePools()
    }

    /// `--hash-device-ids` with its salt; the salt is never repeated in an error.
    private static func deviceIDHasher(_ arguments: ParsedArguments) throws(UsageError) -> DeviceIDHasher? {
        guard arguments[hashDeviceIDs] == .on else { return nil }
        guard let salt = arguments[deviceIDSalt] else {
            throw arguments.usageError(
                .missingValue,
                "\(hashDeviceIDs.longName) on needs a secret salt: set \(deviceIDSalt.environment ?? "") (at least 16 bytes, e.g. openssl rand -hex 32)")
        }
        do {
            return try DeviceIDHasher(salt: salt)
        } catch {
            throw arguments.usageError(.invalidValue, "\(deviceIDSalt.environment ?? "") (or \(deviceIDSalt.longName)): \(error)")
        }
    }
}

/// `address:port`, as `--listen` takes it.
struct ListenAddress: OptionValue {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `127.0.0.1:8080`, `[::1]:8080`: the HTTP server binds numeric addresses only, so a name
    /// (`localhost`) is refused here, naming the option, rather than when the server starts.
    init?(optionText: String) {
        guard let colon = optionText.lastIndex(of: ":"), let port = Int(optionText[optionText.index(after: colon)...]),
              (0...65535).contains(port) else { return nil }
        var host = optionText[..<colon]
        // An IPv6 address in brackets: `::1:8080` alone could be a port of `::1` or part of `::1:8080`.
        if host.hasPrefix("["), host.hasSuffix("]"), host.count >= 2 {
            host = host.dropFirst().dropLast()
        } else if host.contains(":") {
            return nil
        }
        guard Self.isNumericAddress(String(host)) else { return nil }
        self.init(host: String(host), port: port)
    }

    var optionText: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    static var optionExpectation: String { "a numeric IPv4 or IPv6 address and a port, such as 127.0.0.1:8080 or [::1]:8080" }

    private static func isNumericAddress(_ host: String) -> Bool {
        var address4 = in_addr()
        var address6 = in6_addr()
        return inet_pton(AF_INET, host, &address4) == 1 || inet_pton(AF_INET6, host, &address6) == 1
    }
}

/// An on/off option value.
enum Switch: String, CaseIterable, OptionValue {
    case on, off

    init(_ isOn: Bool) {
        self = isOn ? .on : .off
    }
}

extension HTTPServer.Configuration.EventLoop: OptionValue {}
