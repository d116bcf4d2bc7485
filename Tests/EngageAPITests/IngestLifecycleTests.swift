import EmbeddedPostgres
import EngageAPI
import EventStore
import Foundation
import HTTPServer
import Postgres
import Runtime
import Testing
import TestSupport

/// Back-pressure, shutdown and metrics: each test has a server of its own, since each holds the
/// committers back, stops the server or counts everything the server did.
@Suite("Ingestion lifecycle")
struct IngestLifecycleTests {
    @Test(.timeLimit(.minutes(1)))
    func fullQueueIs429WithRetryAfter() async throws {
        let server = try TestServer {
            $0.queueCapacity = 1
            $0.committers = 1
            // Room for a body larger than the socket buffers, sent whole to the full queue below.
            $0.ingest.maxDecompressedBytes = 8 << 20
        }
        let app = uniqueApp()
        let key = try await server.key(app: app)
        let (first, second, third) = (WireEvent.valid(1), WireEvent.valid(2), WireEvent.valid(3))
        let lock = try EventLogLock(server.database)

        // The one committer takes the first request and waits for the lock; the second request
        // then fills the queue (a lone request is always queued, whatever its size).
        async let firstAnswer = server.post(first.array, key: key)
        try await waitUntil("the committer waits for the log") { try await EventLogLock.waiters(server) == 1 }
        async let secondAnswer = server.post(second.array, key: key)
        try await waitUntil("the second request is queued") {
            metricSamples(server.engage.registry.renderPrometheus())["engage_ingest_queue_events"] == "2"
        }

        let queueFull = Problem("ingest-queue-full", status: 429, title: "Too many events are waiting to be stored",
                                detail: "retry after the number of seconds in Retry-After")
        try expectProblem(try await server.post(third.array, key: key), queueFull, retryAfter: "1")
        // Refused from the headers: a client that sends a 6 MB body whole, without waiting for
        // 100-continue, still reads the 429 (the rest of its body is read and discarded).
        let big = "[" + String(repeating: " ", count: 6 << 20) + "]"
        let head = "POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(key)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(big.utf8.count)\r\n\r\n"
        let port = server.port
        let (refusedWhole, closed) = try await offPool { try RawHTTPClient(port: port).sendWholeThenRead(Array((head + big).utf8)) }
        try expectProblem(refusedWhole, queueFull, retryAfter: "1")
        #expect(closed)

        lock.release()
        try expectAccepted(try await firstAnswer, Acceptance(accepted: 1))
        try expectAccepted(try await secondAnswer, Acceptance(accepted: 2))
        // Nothing of the refused request was kept: its retry stores all of it.
        try expectAccepted(try await server.post(third.array, key: key), Acceptance(accepted: 3))
        #expect(try await server.storedIDs(app: app) == Set((first + second + third).ids))
        await server.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func requestInFlightAtShutdownIsAnsweredAndStored() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let events = WireEvent.valid(5)
        let lock = try EventLogLock(server.database)

        async let answer = server.post(events.array, key: key)
        try await waitUntil("the committer waits for the log") { try await EventLogLock.waiters(server) == 1 }
        async let stopped: Void = server.stop()
        // Shutdown stops the HTTP server first: the request is in flight while it drains.
        try await waitUntil("the HTTP server is stopping") {
            server.logSink.lines.contains { $0.contains("msg=service.stopping") && $0.contains("service=http") }
        }
        lock.release()

        try expectAccepted(try await answer, Acceptance(accepted: 5))
        await stopped
        // The pool is closed now; look with a connection of our own.
        let connection = try Connection(configuration: server.database)
        defer { connection.close() }
        let stored = try connection.query("SELECT count(*) FROM events WHERE event_id = ANY(\(events.ids))")[0].decode(0, as: Int.self)
        #expect(stored == 5)
    }

    @Test func metricsCountAcceptedDuplicateAndRejectedEvents() async throws {
        let server = try TestServer()
        let key = try await server.key()
        let events = WireEvent.valid(3)
        let unknownField = String(WireEvent.valid(1)[0].json.dropLast()) + #","client_chosen_name":1}"#
        let body = "[" + (events.map(\.json) + [#"{"event_id":"x"}"#, "[]", unknownField]).joined(separator: ",") + "]"
        try expectAccepted(try await server.post(body, key: key), Acceptance(accepted: 3, rejected: [
            RejectedEvent(3, "event_id", "must be a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e"),
            RejectedEvent(4, nil, "must be a JSON object"),
            RejectedEvent(5, "client_chosen_name", "unknown field"),
        ]))
        try expectAccepted(try await server.post(events.array, key: key), Acceptance(duplicates: 3))
        try expectAccepted(try await server.post(WireEvent.valid(2).ndjson, key: key, contentType: "application/x-ndjson"),
                           Acceptance(accepted: 2))
        _ = try await server.post("[", key: key)

        let response = try await server.request("GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == MetricsRegistry.contentType)
        let samples = metricSamples(response.text)
        #expect(samples["engage_events_accepted_total"] == "5")
        #expect(samples["engage_events_duplicate_total"] == "3")
        #expect(samples["engage_events_rejected_total"] == "3")
        // By field: the top-level field at fault; a field the schema lacks never becomes a label.
        #expect(samples[#"engage_events_rejected_by_field_total{field="event_id"}"#] == "1")
        #expect(samples[#"engage_events_rejected_by_field_total{field="event"}"#] == "1")
        #expect(samples[#"engage_events_rejected_by_field_total{field="unknown field"}"#] == "1")
        #expect(!response.text.contains("client_chosen_name"))
        #expect(samples[#"engage_http_requests_total{route="/v1/events",status="200"}"#] == "3")
        #expect(samples[#"engage_http_requests_total{route="/v1/events",status="400"}"#] == "1")
        #expect(samples["engage_ingest_queue_events"] == "0")
        #expect(response.text.contains("# TYPE engage_events_accepted_total counter\n"))
        await server.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func metricsCountOpenConnectionsIdleOrNot() async throws {
        let server = try TestServer()
        // Connecting on loopback returns at once; the connections stay silent until the end.
        let idle = try (0..<3).map { _ in try RawHTTPClient(port: server.port) }
        // The daemon accepts the three on its own threads, maybe after the scrape's connection:
        // scrape until it counts them (the time limit catches a count that never comes).
        var open: String?
        repeat {
            open = metricSamples(try await server.request("GET", "/metrics").text)["engage_http_connections_open"]
        } while open != "4"
        #expect(open == "4", "three idle connections and the scrape's own")
        withExtendedLifetime(idle) {}
        await server.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func metricsCountRequestsBegunAndNotAnswered() async throws {
        let server = try TestServer()
        let key = try await server.key()
        // Two ingest requests whose bodies never finish: begun, never answered.
        let waiting = try (0..<2).map { _ in
            let client = try RawHTTPClient(port: server.port)
            try client.send("POST /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(key)\r\n"
                            + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"events\"")
            return client
        }
        // An idle connection is no request.
        let idle = try RawHTTPClient(port: server.port)
        // The daemon reads them on its own threads: scrape until it counts them, and no more (the
        // time limit catches a count that never comes, or an idle connection counted too; a
        // scrape may also briefly see the previous one, counted until its answer is sent).
        var inFlight: String?
        repeat {
            inFlight = metricSamples(try await server.request("GET", "/metrics").text)["engage_http_requests_in_flight"]
        } while inFlight != "3"
        #expect(inFlight == "3", "two unfinished requests and the scrape's own")
        withExtendedLifetime((waiting, idle)) {}
        await server.stop()
    }

    @Test func readinessFailsWhileMigrationsArePending() async throws {
        let server = try TestServer()
        #expect(try await server.request("GET", "/readyz").status == 200)
        _ = try await server.pool.withConnection { try $0.execute("DELETE FROM schema_migrations WHERE version = 2") }
        let response = try await server.request("GET", "/readyz")
        try expectProblem(response, Problem("migrations-pending", status: 503, title: "The database schema is not current",
                                            detail: "1 migration(s) not applied: 002_api_keys.sql"),
                          retryAfter: "5")
        #expect(try await server.request("GET", "/healthz").status == 200)
        await server.stop()
    }
}

/// A database outage needs a PostgreSQL cluster of its own: stopping the shared one would break
/// every other test.
@Suite("Ingestion during a database outage")
struct DatabaseOutageTests {
    @Test(.timeLimit(.minutes(2)))
    func unreachableDatabaseIs503AndIngestionRecoversWithNothingLost() async throws {
        let directory = "/tmp/engage-outage-\(getpid())-\(UUID().uuidString.prefix(6))"
        let cluster = try EmbeddedPostgres(options: .init(dataDirectory: directory, database: "outage", settings: ["fsync": "off"]))
        #expect(try cluster.start() == .started)
        defer {
            try? cluster.stop(mode: "immediate")
            try? FileManager.default.removeItem(atPath: directory)
        }
        let database = cluster.configuration()
        do {
            let connection = try Connection(configuration: database)
            defer { connection.close() }
            try Migrator.fromSQLDirectory().migrate(connection)
        }
        var configuration = EngageServer.Configuration()
        configuration.http.port = 0
        configuration.poolSize = 2
        // Long enough that the first key stays cached through the outage: its requests fail in
        // the committer, the second key's in the key lookup.
        configuration.keyCacheLifetime = .seconds(120)
        let engage = try EngageServer(configuration: configuration, database: database,
                                      logger: Logger(label: "test", level: .debug, sink: MemoryLogSink()))
        let running = Task { try await engage.run() }
        let client = LoopbackClient(port: engage.port)

        let cachedKey = try await engage.keys.create(app: "outage", role: .ingest).secret
        let uncachedKey = try await engage.keys.create(app: "outage", role: .ingest).secret
        let before = WireEvent.valid(2)
        let during = WireEvent.valid(3)
        try expectAccepted(try await client.post(before.array, key: cachedKey), Acceptance(accepted: 2))

        try cluster.stop()
        // The cached key's request reaches the committer (whose failed append may have stored
        // something, for all it knows); the other's key cannot be looked up (nothing stored).
        try expectProblem(try await client.post(during.array, key: cachedKey), .eventsNotAcknowledged, retryAfter: "5")
        try expectProblem(try await client.post(during.array, key: uncachedKey), .databaseUnavailable, retryAfter: "5")
        try expectProblem(try await client.request("GET", "/readyz"), .databaseUnavailable, retryAfter: "5")
        #expect(try await client.request("GET", "/healthz").status == 200)

        #expect(try cluster.start() == .started)
        // A client retries on 503; connections broken by the restart may cost a retry or two.
        var answer = try await client.post(during.array, key: uncachedKey)
        var retries = 0
        while answer.status == 503 && retries < 20 {
            let problem = try JSONDecoder().decode(Problem.self, from: Data(answer.body))
            #expect([Problem.databaseUnavailable, .eventsNotAcknowledged].contains(problem))
            #expect(answer.headers["Retry-After"] == "5")
            try await Task.sleep(for: .milliseconds(100))
            answer = try await client.post(during.array, key: uncachedKey)
            retries += 1
        }
        // Nothing of the refused requests was stored: all three events are new now.
        try expectAccepted(answer, Acceptance(accepted: 3))
        try expectAccepted(try await client.post((before + during).array, key: cachedKey), Acceptance(duplicates: 5))
        let ready = try await client.request("GET", "/readyz")
        #expect(ready.status == 200)

        running.cancel()
        _ = try? await running.value
        await engage.pool.close()
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        #expect(try connection.query("SELECT count(*) FROM events WHERE app_id = 'outage'")[0].decode(0, as: Int.self) == 5)
        #expect(try connection.query("SELECT count(DISTINCT event_id) FROM events WHERE event_id = ANY(\((before + during).ids))")[0]
            .decode(0, as: Int.self) == 5)
    }
}

/// Requests to a server that is not a `TestServer`.
struct LoopbackClient: Sendable {
    let port: Int

    func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []) async throws -> RawHTTPClient.Response {
        try await offPool { [port] in try RawHTTPClient(port: port).request(method, target, headers: headers, body: body) }
    }

    func post(_ body: String, key: String) async throws -> RawHTTPClient.Response {
        try await request("POST", "/v1/events", headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")],
                          body: Array(body.utf8))
    }
}
