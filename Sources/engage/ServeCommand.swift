import EngageAPI
import EngageCore
import EventStore
import Foundation
import HTTPServer
import Postgres
import Projections
import Runtime

/// `engage serve`: the ingestion API with group commit, health and metrics, until SIGTERM/SIGINT.
enum ServeCommand: EngageCommand {
    static let definition = Command(
        name: "serve",
        abstract: "Run engage's HTTP API on the database (local unless --database) until SIGTERM or SIGINT.",
        options: CommonOptions.database + CommonOptions.logging + ServerOptions.options)

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = try CommonOptions.logger(arguments)
        let options = try ServerOptions(arguments)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        let runtime = try EngageServer(configuration: options.server, database: setup.configuration, logger: logger)
        logger.info("engage.listening", ["address": "http://\(options.host):\(runtime.server.port)"])
        try await runtime.run()
        await runtime.pool.close()
        logger.info("engage.stopped")
    }
}

/// Flags of the server, each with an ENGAGE_* environment variable.
struct ServerOptions {
    static let options: [Command.Option] = [
        .init("listen", value: "host:port", help: "Address to listen on.", environment: "ENGAGE_LISTEN", default: "127.0.0.1:8080"),
        .init("http-threads", value: "n", help: "HTTP daemon threads.", environment: "ENGAGE_HTTP_THREADS", default: "2"),
        .init("http-event-loop", value: "poll|epoll", help: "How HTTP threads wait: poll is cheaper per request, epoll per idle connection (docs/scaling.md).",
              environment: "ENGAGE_HTTP_EVENT_LOOP", default: "poll"),
        .init("max-connections", value: "n", help: "Most concurrent HTTP connections.", environment: "ENGAGE_MAX_CONNECTIONS", default: "1024"),
        .init("max-connections-per-address", value: "n", help: "Most concurrent HTTP connections from one client address; 0 for no limit.",
              environment: "ENGAGE_MAX_CONNECTIONS_PER_ADDRESS", default: "0"),
        .init("max-header-bytes", value: "bytes", help: "Size of a request's headers; larger ones get 431.",
              environment: "ENGAGE_MAX_HEADER_BYTES", default: "16384"),
        .init("request-timeout", value: "seconds", help: "Time a connection has to deliver a whole request before it is closed.",
              environment: "ENGAGE_REQUEST_TIMEOUT", default: "30"),
        .init("idle-timeout", value: "seconds", help: "Time a silent connection stays open.", environment: "ENGAGE_IDLE_TIMEOUT", default: "15"),
        .init("rate-limit", value: "requests/s", help: "Requests each API key may make per second (N/s) or minute (N/m) in this process, or off.",
              environment: "ENGAGE_RATE_LIMIT", default: "off"),
        .init("rate-burst", value: "requests", help: "Requests a key may make at once after a quiet spell (default: ten seconds' worth of the rate).",
              environment: "ENGAGE_RATE_BURST"),
        .init("hash-device-ids", value: "on|off", help: "Store HMAC-SHA256(salt, device_id) instead of device ids; assignments hash the same way.",
              environment: "ENGAGE_HASH_DEVICE_IDS", default: "off"),
        .init("device-id-salt", value: "secret", help: "The secret salt of --hash-device-ids, at least 16 bytes; prefer the environment variable.",
              environment: "ENGAGE_DEVICE_ID_SALT"),
        .init("pool-size", value: "n", help: "PostgreSQL connections, besides one per committer.", environment: "ENGAGE_POOL_SIZE", default: "8"),
        .init("committers", value: "n", help: "Group-commit transactions in flight at once, each on a thread and connection of its own.", environment: "ENGAGE_COMMITTERS", default: "2"),
        .init("queue-capacity", value: "events", help: "Events waiting to be stored before requests get 429.",
              environment: "ENGAGE_QUEUE_CAPACITY", default: "50000"),
        .init("parallel-commit-events", value: "events",
              help: "Events waiting before a commit starts while another is running (0: whenever a committer is free).",
              environment: "ENGAGE_PARALLEL_COMMIT_EVENTS", default: "100"),
        .init("max-events", value: "n", help: "Events per request.", environment: "ENGAGE_MAX_EVENTS", default: "1000"),
        .init("max-body-bytes", value: "bytes", help: "Request body size after decompression.", environment: "ENGAGE_MAX_BODY_BYTES", default: "1048576"),
        .init("max-event-bytes", value: "bytes", help: "Size of one event.", environment: "ENGAGE_MAX_EVENT_BYTES", default: "8192"),
        .init("max-past-days", value: "days", help: "How old occurred_at may be.", environment: "ENGAGE_MAX_PAST_DAYS", default: "30"),
        .init("max-future-minutes", value: "minutes", help: "How far ahead occurred_at may be.", environment: "ENGAGE_MAX_FUTURE_MINUTES", default: "10"),
        .init("projector", value: "on|off", help: "Run the engagement projector in this process (one process is active, others stand by).",
              environment: "ENGAGE_PROJECTOR", default: "on"),
        .init("scheduler", value: "on|off", help: "Run the experiment analysis scheduler in this process (runs are shared safely between processes).",
              environment: "ENGAGE_SCHEDULER", default: "on"),
    ]

    var server = EngageServer.Configuration()
    var host: String { server.host }

    init(_ arguments: ParsedArguments) throws {
        let listen = try arguments.value("listen", default: "127.0.0.1:8080")
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw UsageError(code: .invalidValue, message: "invalid value '\(listen)' for option '--listen': expected host:port",
                             usage: ServeCommand.definition.usage(path: ["engage", "serve"]))
        }
        server.host = String(listen[..<colon])
        server.port = port
        server.httpThreads = try arguments.int("http-threads", default: 2, in: 1...64)
        server.httpEventLoop = try arguments.value("http-event-loop", default: HTTPServer.Configuration.EventLoop.poll)
        server.maxConnections = try arguments.int("max-connections", default: 1024, in: 1...100_000)
        server.maxConnectionsPerAddress = try arguments.int("max-connections-per-address", default: 0, in: 0...100_000)
        server.maxHeaderBytes = try arguments.int("max-header-bytes", default: 16 * 1024, in: 1024...1_048_576)
        server.requestTimeout = .seconds(try arguments.int("request-timeout", default: 30, in: 1...3600))
        server.idleTimeout = .seconds(try arguments.int("idle-timeout", default: 15, in: 1...3600))
        server.rateLimit = try Self.rateLimit(arguments)
        server.poolSize = try arguments.int("pool-size", default: 8, in: 2...200)
        server.committers = try arguments.int("committers", default: 2, in: 1...32)
        // The local cluster allows 200 connections (and projector, scheduler and readers share the pool).
        guard server.poolSize + server.committers <= 200 else {
            throw UsageError(code: .invalidValue,
                             message: "options '--pool-size' and '--committers' open \(server.poolSize + server.committers) PostgreSQL connections together; at most 200",
                             usage: ServeCommand.definition.usage(path: ["engage", "serve"]))
        }
        server.queueCapacity = try arguments.int("queue-capacity", default: 50_000, in: 1_000...10_000_000)
        server.parallelCommitEvents = try arguments.int("parallel-commit-events", default: 100, in: 0...1_000_000)
        var limits = IngestLimits()
        limits.maxEvents = try arguments.int("max-events", default: 1000, in: 1...100_000)
        limits.maxEventBytes = try arguments.int("max-event-bytes", default: 8192, in: 256...1_048_576)
        limits.maxPast = .seconds(86_400 * (try arguments.int("max-past-days", default: 30, in: 1...3650)))
        limits.maxFuture = .seconds(60 * (try arguments.int("max-future-minutes", default: 10, in: 0...1440)))
        let maxBody = try arguments.int("max-body-bytes", default: 1 << 20, in: 1024...(256 << 20))
        server.ingest = IngestRoute.Configuration(limits: limits, maxDecompressedBytes: maxBody,
                                                  deviceIDHasher: try Self.deviceIDHasher(arguments))
        server.runProjector = try arguments.value("projector", default: Switch.on) == .on
        server.projector.failpoints = Failpoints.fromEnvironment()
        server.runScheduler = try arguments.value("scheduler", default: Switch.on) == .on
        let failpoints = server.projector.failpoints
        server.scheduler.failpoint = { try failpoints.hit($0) }
    }

    /// `--rate-limit` and `--rate-burst`; nil when off.
    static func rateLimit(_ arguments: ParsedArguments) throws -> RateLimit? {
        let text = try arguments.value("rate-limit", default: "off")
        if text == "off" || text == "0" { return nil }
        guard let (requests, period) = RateLimit.parseRate(text) else {
            throw UsageError(code: .invalidValue,
                             message: "invalid value '\(text)' for option '--rate-limit': expected N/s, N/m (N from 1 to 1000000) or off",
                             usage: ServeCommand.definition.usage(path: ["engage", "serve"]))
        }
        let tenSeconds = max(1, requests * 10 / Int(period.components.seconds))
        let burst = try arguments.int("rate-burst", default: tenSeconds, in: 1...10_000_000)
        return RateLimit(requests: requests, per: period, burst: burst)
    }

    /// `--hash-device-ids` with its salt; the salt is never repeated in an error.
    static func deviceIDHasher(_ arguments: ParsedArguments) throws -> DeviceIDHasher? {
        guard try arguments.value("hash-device-ids", default: Switch.off) == .on else { return nil }
        let usage = ServeCommand.definition.usage(path: ["engage", "serve"])
        guard let salt = arguments.value("device-id-salt") else {
            throw UsageError(code: .missingValue,
                             message: "--hash-device-ids on needs a secret salt: set ENGAGE_DEVICE_ID_SALT (at least 16 bytes, e.g. openssl rand -hex 32)",
                             usage: usage)
        }
        do {
            return try DeviceIDHasher(salt: salt)
        } catch {
            throw UsageError(code: .invalidValue, message: "ENGAGE_DEVICE_ID_SALT (or --device-id-salt): \(error)", usage: usage)
        }
    }
}

/// An on/off option value.
enum Switch: String, CaseIterable {
    case on, off
}
