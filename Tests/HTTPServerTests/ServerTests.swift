import Foundation
import Glibc
import Synchronization
import Testing

@testable import HTTPServer
import TestSupport

/// Records how many handler invocations overlap.
final class ConcurrencyProbe: Sendable {
    private let counts = Mutex((current: 0, maximum: 0))

    func enter() {
        counts.withLock {
            $0.current += 1
            $0.maximum = max($0.maximum, $0.current)
        }
    }

    func leave() {
        counts.withLock { $0.current -= 1 }
    }

    var maximum: Int { counts.withLock { $0.maximum } }
    var current: Int { counts.withLock { $0.current } }
}

/// Holds `/slow` requests until the test lets them go.
final class Hold: Sendable {
    private let released = Atomic(false)

    var isReleased: Bool { released.load(ordering: .acquiring) }
    func release() { released.store(true, ordering: .releasing) }
}

final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

func testConfiguration(_ eventLoop: HTTPServer.Configuration.EventLoop = .poll) -> HTTPServer.Configuration {
    var configuration = HTTPServer.Configuration()
    configuration.eventLoop = eventLoop
    configuration.maxBodyBytes = 64 * 1024
    configuration.maxHeaderBytes = 8 * 1024
    configuration.shutdownGrace = .seconds(3)
    return configuration
}

func testRouter(probe: ConcurrencyProbe = ConcurrencyProbe(), hold: Hold = Hold()) -> Router {
    var router = Router()
    router.get("/hello/:name") { request in
        .text("hello \(request.pathParameters["name"] ?? "") q=\(request.query("q") ?? "-") from=\(request.remoteAddress)")
    }
    router.post("/echo") { request in
        HTTPResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: request.body)
    }
    router.get("/sleep/:ms") { request in
        probe.enter()
        defer { probe.leave() }
        let milliseconds = Int(request.pathParameters["ms"] ?? "") ?? 0
        try? await Task.sleep(for: .milliseconds(milliseconds))
        return .text("slept")
    }
    router.get("/slow") { _ in
        probe.enter()
        defer { probe.leave() }
        // Deliberately ignores cancellation: the graceful shutdown must wait for it anyway.
        while !hold.isReleased { try? await Task.sleep(for: .milliseconds(5)) }
        return .text("done")
    }
    return router
}

/// Waits for `condition` to hold; the test's time limit catches a state that never comes.
func eventually(_ condition: () -> Bool) async throws {
    try await pollUntil(every: .milliseconds(5)) { condition() }
}

/// Runs `body` against a live server on an ephemeral loopback port, then cancels `run()`.
@discardableResult
func withServer<T: Sendable>(
    _ configuration: HTTPServer.Configuration = testConfiguration(),
    router: Router = testRouter(),
    log: (@Sendable (String) -> Void)? = nil,
    _ body: @Sendable (HTTPServer) async throws -> T
) async throws -> T {
    let server = try HTTPServer(configuration: configuration, responder: router, log: log)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        let result = try await body(server)
        group.cancelAll()
        try await group.waitForAll()
        return result
    }
}

@Suite(.serialized, .timeLimit(.minutes(1))) struct ServerTests {
    @Test func routesParametersAndQuery() async throws {
        try await withServer { server in
            let response = try await offPool {
                try RawHTTPClient(port: server.port).request("GET", "/hello/w%C3%B6rld?q=a+b%26c&x")
            }
            #expect(response.status == 200)
            #expect(response.text == "hello wörld q=a b&c from=127.0.0.1")
        }
    }

    /// A query is percent-encoded UTF-8 or refused: read loosely, `%ff` and `%fe` were one value
    /// (U+FFFD) and `%4` stood for itself.
    @Test func aQueryThatIsNotPercentEncodedUTF8IsRefused() async throws {
        try await withServer { server in
            let answers = try await offPool {
                try ["q=%ff", "q=%fe", "q=%4", "q=%%41", "q=a%2", "%zz=1", "q=%C3", "q=ok&x=%80"].map { query in
                    (query, try RawHTTPClient(port: server.port).request("GET", "/hello/w?\(query)"))
                }
            }
            for (query, answer) in answers {
                #expect(answer.status == 400, "\(query): \(answer.status) \(answer.text)")
                #expect(answer.text == HTTPProblem.malformedQuery.json, "\(query): \(answer.text)")
            }
            let fine = try await offPool { try RawHTTPClient(port: server.port).request("GET", "/hello/w?q=%EF%BF%BD%25+x&empty&=") }
            #expect(fine.status == 200 && fine.text == "hello w q=\u{FFFD}% x from=127.0.0.1", "\(fine.text)")
        }
        #expect(PercentDecoding.decodeStrictly(Array("caf%C3%A9+x".utf8), plusAsSpace: true) == "café x")
        #expect(PercentDecoding.decodeStrictly(Array("%E2%82".utf8), plusAsSpace: false) == nil)
    }

    /// `%2F` was decoded before the path was split into segments: `POST /things/abc%2Fstop`
    /// reached the stop route of `abc` (an admin's request for an id that cannot exist stopped an
    /// experiment). It stays one segment now, with its slash encoded.
    @Test func anEncodedSlashNeverSplitsASegment() async throws {
        var router = Router()
        router.get("/things/:id") { request in .text("thing \(request.pathParameters["id"] ?? "")") }
        router.post("/things/:id/stop") { request in .text("stopped \(request.pathParameters["id"] ?? "")") }
        try await withServer(router: router) { server in
            let (encoded, asThing, plain) = try await offPool {
                let client = try RawHTTPClient(port: server.port)
                return (try client.request("POST", "/things/abc%2Fstop"), try client.request("GET", "/things/abc%2fstop"),
                        try client.request("POST", "/things/abc/stop"))
            }
            #expect(encoded.status == 405, "\(encoded.status) \(encoded.text)")
            #expect(encoded.headers["Allow"] == "GET, HEAD")
            #expect(asThing.status == 200 && asThing.text == "thing abc%2fstop", "\(asThing.text)")
            #expect(plain.status == 200 && plain.text == "stopped abc", "\(plain.text)")
        }
        #expect(PercentDecoding.decodePath("/a%2Fb%20c%2f") == "/a%2Fb c%2f")
    }

    @Test func unknownPathAndMethodAreProblems() async throws {
        try await withServer { server in
            let (missing, wrong) = try await offPool {
                let client = try RawHTTPClient(port: server.port)
                return (try client.request("GET", "/nope"), try client.request("DELETE", "/echo"))
            }
            #expect(missing.status == 404)
            #expect(missing.headers["Content-Type"] == "application/problem+json")
            #expect(missing.text.contains(#""type":"https://engage.dev/problems/not-found""#))
            #expect(wrong.status == 405)
            #expect(wrong.headers["Allow"] == "POST")
        }
    }

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func echoesBodiesAndReusesOneConnection(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        let log = LogLines()
        try await withServer(testConfiguration(eventLoop), log: log.append) { server in
            let bodies: [[UInt8]] = [Array("first".utf8), [UInt8](repeating: 0xAB, count: 40_000), []]
            let responses = try await offPool {
                let client = try RawHTTPClient(port: server.port)
                return try bodies.map { try client.request("POST", "/echo", body: $0) }
            }
            #expect(responses.map(\.status) == [200, 200, 200])
            #expect(responses.map(\.body) == bodies)
            // The request-completed notification may trail the last response by a moment.
            try await eventually { server.statistics.requestsCompleted == 3 }
            let statistics = server.statistics
            #expect(statistics.connectionsAccepted == 1)
            #expect(statistics.requestsInFlight == 0)
        }
        let lines = log.all.filter { $0.hasPrefix("http.request ") }
        #expect(lines.count == 3)
        #expect(lines.first?.hasPrefix("http.request method=POST path=/echo status=200 duration.ms=") == true)
        #expect(lines.allSatisfy { !$0.contains("first") })
    }

    @Test func chunkedBodyIsReassembled() async throws {
        try await withServer { server in
            let response = try await offPool {
                let client = try RawHTTPClient(port: server.port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                try client.send("5\r\nhello\r\n")
                Thread.sleep(forTimeInterval: 0.05)
                try client.send("7\r\n, world\r\n0\r\n\r\n")
                return try client.readResponse()
            }
            #expect(response.status == 200)
            #expect(response.text == "hello, world")
        }
    }

    @Test func declaredOversizedBodyGets413WithoutSendingIt() async throws {
        try await withServer { server in
            let (response, closed) = try await offPool {
                let client = try RawHTTPClient(port: server.port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
                return (try client.readResponse(), client.waitForClose())
            }
            #expect(response.status == 413)
            #expect(response.headers["Content-Type"] == "application/problem+json")
            #expect(response.text == HTTPProblem.payloadTooLarge(limit: 64 * 1024).json)
            #expect(closed)
        }
    }

    @Test func streamedOversizedBodyGets413() async throws {
        try await withServer { server in
            let response = try await offPool {
                let client = try RawHTTPClient(port: server.port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                let chunk = "4000\r\n" + String(repeating: "z", count: 0x4000) + "\r\n"
                for _ in 0..<6 { try client.send(chunk) }  // 96 KiB > 64 KiB
                try client.send("0\r\n\r\n")
                return try client.readResponse()
            }
            #expect(response.status == 413)
            #expect(response.text == HTTPProblem.payloadTooLarge(limit: 64 * 1024).json)
        }
    }

    @Test func oversizedHeadersAreRejected() async throws {
        try await withServer { server in
            let (over, farOver) = try await offPool {
                let over = try RawHTTPClient(port: server.port)
                    .request("GET", "/hello/x", headers: [("X-Big", String(repeating: "a", count: 10_000))])
                let farOver = try RawHTTPClient(port: server.port)
                    .request("GET", "/hello/x", headers: [("X-Big", String(repeating: "a", count: 100_000))])
                return (over, farOver)
            }
            #expect(over.status == 431)
            #expect(over.text == HTTPProblem.headersTooLarge(limit: 8 * 1024).json)
            #expect(farOver.status == 431)
        }
    }

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func tricklingClientIsCutOffWhileOthersAreServed(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        var configuration = testConfiguration(eventLoop)
        configuration.requestTimeout = .milliseconds(800)
        let request = Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n".utf8)
            + [UInt8](repeating: 0x61, count: 1000)
        try await withServer(configuration) { server in
            let sentSoFar = SentBytes()
            // A byte every 50 ms: the whole request would take about 53 s, half of it 26 s; the
            // 0.8 s request timeout must cut it off long before (bytes are counted, not seconds).
            async let trickle: (cutOff: Bool, sent: Int) = offPool {
                let client = try RawHTTPClient(port: server.port)
                for (index, byte) in request.enumerated() {
                    do { try client.send([byte]) } catch { return (true, index) }
                    sentSoFar.count.store(index + 1, ordering: .relaxed)
                    Thread.sleep(forTimeInterval: 0.05)
                    if index + 1 == request.count / 2 { break }
                }
                return (client.waitForClose(), sentSoFar.count.load(ordering: .relaxed))
            }
            try await pollUntil { sentSoFar.count.load(ordering: .relaxed) > 0 }
            let normal = try await offPool { try RawHTTPClient(port: server.port).request("GET", "/hello/n") }
            #expect(normal.status == 200)
            let result = try await trickle
            #expect(result.cutOff)
            #expect(result.sent < request.count / 2, "the server let a trickling client send half its request")
            #expect(server.statistics.requestsTimedOut >= 1)
        }
    }

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func manyConcurrentRequestsOverlap(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        let probe = ConcurrencyProbe()
        try await withServer(testConfiguration(eventLoop), router: testRouter(probe: probe)) { server in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<64 {
                    group.addTask {
                        try await offPool { try RawHTTPClient(port: server.port).request("GET", "/sleep/50").status }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.count == 64)
            #expect(statuses.allSatisfy { $0 == 200 })
        }
        #expect(probe.maximum > 1)
    }

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func cancellationDrainsInFlightRequestsThenRefusesConnections(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        let probe = ConcurrencyProbe()
        let hold = Hold()
        var configuration = testConfiguration(eventLoop)
        // The drain ends when the slow request does; no grace period may run out first.
        configuration.shutdownGrace = .seconds(600)
        let server = try HTTPServer(configuration: configuration, responder: testRouter(probe: probe, hold: hold))
        let port = server.port
        let running = Task { try await server.run() }
        async let slow = offPool { try RawHTTPClient(port: port).request("GET", "/slow") }
        try await pollUntil(every: .milliseconds(5)) { probe.current == 1 }
        running.cancel()
        // Draining, while the slow request is still being handled: a poll daemon's listener is
        // shut, so the kernel refuses; an epoll daemon (which cannot be quiesced safely) closes
        // each new connection before reading from it.
        try await pollUntil(every: .milliseconds(5)) {
            do {
                let client = try RawHTTPClient(port: port)
                guard eventLoop == .epoll else { return false }
                _ = try client.request("GET", "/hello/late")
                return false
            } catch RawHTTPClient.Failure.connect(errno: ECONNREFUSED) {
                return true
            } catch RawHTTPClient.Failure.connect(errno: ECONNRESET) {
                // Queued on the listener as it closed: the next attempt is refused.
                return false
            } catch RawHTTPClient.Failure.closed, RawHTTPClient.Failure.send(errno: ECONNRESET), RawHTTPClient.Failure.send(errno: EPIPE) {
                return true
            }
        }
        if eventLoop == .epoll {
            // Closed by the accept policy: never counted as a connection, nothing read from it.
            let accepted = server.statistics.connectionsAccepted
            #expect(throws: RawHTTPClient.Failure.self) { try RawHTTPClient(port: port).request("GET", "/hello/late") }
            #expect(server.statistics.connectionsAccepted == accepted)
        }
        #expect(probe.current == 1)
        hold.release()
        let response = try await slow
        #expect(response.status == 200)
        #expect(response.text == "done")
        #expect(response.headers["Connection"]?.lowercased() == "close")
        try await running.value
        #expect(throws: RawHTTPClient.Failure.connect(errno: ECONNREFUSED)) { try RawHTTPClient(port: port) }
        #expect(server.statistics.requestsInFlight == 0)
    }

    @Test func daemonsSharingAnEphemeralPortAllServe() async throws {
        var configuration = testConfiguration()
        configuration.threading = .daemonsSharingPort(3)
        try await withServer(configuration) { server in
            #expect(server.port > 0)
            let statuses = try await offPool {
                try (0..<12).map { _ in try RawHTTPClient(port: server.port).request("GET", "/hello/x").status }
            }
            #expect(statuses == Array(repeating: 200, count: 12))
        }
    }

    @Test func runCannotBeCalledTwice() async throws {
        let server = try HTTPServer(configuration: testConfiguration(), responder: testRouter())
        let running = Task { try await server.run() }
        running.cancel()
        try await running.value
        await #expect(throws: HTTPServerError.alreadyStarted) { try await server.run() }
    }
}
