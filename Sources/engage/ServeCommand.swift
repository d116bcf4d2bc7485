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
        .init("max-connections", value: "n", help: "Most concurrent HTTP connections.", environment: "ENGAGE_MAX_CONNECTIONS", default: "1024"),
        .init("pool-size", value: "n", help: "PostgreSQL connections.", environment: "ENGAGE_POOL_SIZE", default: "8"),
        .init("committers", value: "n", help: "Group-commit transactions in flight at once.", environment: "ENGAGE_COMMITTERS", default: "2"),
        .init("queue-capacity", value: "events", help: "Events waiting to be stored before requests get 429.",
              environment: "ENGAGE_QUEUE_CAPACITY", default: "50000"),
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
        server.maxConnections = try arguments.int("max-connections", default: 1024, in: 1...100_000)
        server.poolSize = try arguments.int("pool-size", default: 8, in: 2...200)
        server.committers = try arguments.int("committers", default: 2, in: 1...32)
        server.queueCapacity = try arguments.int("queue-capacity", default: 50_000, in: 1_000...10_000_000)
        var limits = IngestLimits()
        limits.maxEvents = try arguments.int("max-events", default: 1000, in: 1...100_000)
        limits.maxEventBytes = try arguments.int("max-event-bytes", default: 8192, in: 256...1_048_576)
        limits.maxPast = .seconds(86_400 * (try arguments.int("max-past-days", default: 30, in: 1...3650)))
        limits.maxFuture = .seconds(60 * (try arguments.int("max-future-minutes", default: 10, in: 0...1440)))
        let maxBody = try arguments.int("max-body-bytes", default: 1 << 20, in: 1024...(256 << 20))
        server.ingest = IngestRoute.Configuration(limits: limits, maxDecompressedBytes: maxBody)
        server.runProjector = try arguments.value("projector", default: Switch.on) == .on
        server.projector.failpoints = Failpoints.fromEnvironment()
        server.runScheduler = try arguments.value("scheduler", default: Switch.on) == .on
        let failpoints = server.projector.failpoints
        server.scheduler.failpoint = { try failpoints.hit($0) }
    }
}


/// An on/off option value.
enum Switch: String, CaseIterable {
    case on, off
}
