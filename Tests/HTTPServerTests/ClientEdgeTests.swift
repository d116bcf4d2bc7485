import Foundation
import Glibc
import Synchronization
import Testing

@testable import HTTPServer
import TestSupport

/// Clients at the edges of HTTP/1.1 that the server must still answer: one that shuts its sending
/// side after a complete request (`nc -N`, some proxies), and one that sends its whole body
/// without waiting for `100-continue` to a request refused from its head alone.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ClientEdgeTests {
    /// Every kind of answer: in a task at once or later, inline at once or from another thread,
    /// and a body larger than a socket buffer.
    static func router() -> Router {
        var router = testRouter()
        router.post("/inline", inline: { request, reply in
            switch String(decoding: request.body, as: UTF8.self) {
            case "now":
                reply.send(.text("now"))
            case "later":
                Thread {
                    Thread.sleep(forTimeInterval: 0.02)
                    reply.send(.text("later"))
                }.start()
            default:
                return false
            }
            return true
        }) { _ in .text("task") }
        router.post("/guarded", beforeBody: { request in
            if request.headers["X-Key"] == nil {
                return HTTPResponse(status: 401, headers: ["WWW-Authenticate": "Bearer"], body: Array("no key".utf8))
            }
            if request.headers["X-Busy"] != nil {
                return HTTPResponse(status: 429, headers: ["Retry-After": "3"], body: Array("busy".utf8))
            }
            return nil
        }) { request in .text("stored \(request.body.count)") }
        return router
    }

    struct Exchange: Sendable, CustomStringConvertible {
        var request: String
        var body: [UInt8] = []
        var expectedStatus = 200
        var expectedBody: [UInt8]

        var description: String { String(request.prefix(30)) }
    }

    static let big = [UInt8]((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    static let halfClosedExchanges = [
        Exchange(request: "GET /hello/x HTTP/1.1\r\nHost: x\r\n\r\n", expectedBody: Array("hello x q=- from=127.0.0.1".utf8)),
        Exchange(request: "GET /sleep/30 HTTP/1.1\r\nHost: x\r\n\r\n", expectedBody: Array("slept".utf8)),
        Exchange(request: "POST /inline HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", body: Array("now".utf8),
                 expectedBody: Array("now".utf8)),
        Exchange(request: "POST /inline HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", body: Array("later".utf8),
                 expectedBody: Array("later".utf8)),
        Exchange(request: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(big.count)\r\n\r\n", body: big, expectedBody: big),
        Exchange(request: "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", expectedStatus: 404,
                 expectedBody: HTTPProblem.notFound(path: "/nowhere").response.body),
    ]

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func aClientThatHalfClosesAfterItsRequestGetsTheWholeAnswer(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        var configuration = testConfiguration(eventLoop)
        configuration.maxBodyBytes = 1 << 20
        try await withServer(configuration, router: Self.router()) { server in
            let port = server.port
            // Many at once, so that resumed connections meet others in the daemon's loop.
            let outcomes = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for round in 0..<8 {
                    for (index, exchange) in Self.halfClosedExchanges.enumerated() {
                        group.addTask {
                            let outcome = try await offPool { () -> String in
                                let client = try RawHTTPClient(port: port)
                                try client.send(Array(exchange.request.utf8) + exchange.body)
                                client.finishSending()
                                do {
                                    let response = try client.readResponse()
                                    guard response.status == exchange.expectedStatus else { return "status \(response.status)" }
                                    guard response.body == exchange.expectedBody else { return "body of \(response.body.count) bytes" }
                                    return client.waitForClose() ? "answered, then closed" : "left open"
                                } catch {
                                    return "\(error)"
                                }
                            }
                            return (round * 100 + index, outcome)
                        }
                    }
                }
                return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            #expect(outcomes.count == 8 * Self.halfClosedExchanges.count)
            for (key, outcome) in outcomes.sorted(by: { $0.key < $1.key }) {
                #expect(outcome == "answered, then closed", "exchange \(key % 100)")
            }
        }
    }

    /// Bodies far larger than the socket buffers, so that the client is still writing when the
    /// server answers: without a lingering close its writes fail with a reset.
    static let bodyBytes = 3 << 20

    static func earlyRefusals() -> [(name: String, head: String, body: [UInt8], status: Int)] {
        let body = [UInt8](repeating: 0x61, count: bodyBytes)
        let chunked = (0..<48).map { _ in "10000\r\n" + String(repeating: "c", count: 0x10000) + "\r\n" }.joined() + "0\r\n\r\n"
        return [
            ("413 declared", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(5 << 20)\r\n\r\n", [UInt8](repeating: 0x62, count: 5 << 20), 413),
            // Past Int64: Swift's Int cannot hold it, libmicrohttpd can and would wait for it all.
            ("413 declared beyond Int64", "POST /guarded HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\n", body, 413),
            ("431", "POST /echo HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "h", count: 9000))\r\nContent-Length: \(bodyBytes)\r\n\r\n", body, 431),
            ("401 before the body", "POST /guarded HTTP/1.1\r\nHost: x\r\nContent-Length: \(bodyBytes)\r\n\r\n", body, 401),
            ("429 before the body", "POST /guarded HTTP/1.1\r\nHost: x\r\nX-Key: k\r\nX-Busy: 1\r\nContent-Length: \(bodyBytes)\r\n\r\n", body, 429),
            ("401 before a chunked body", "POST /guarded HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", Array(chunked.utf8), 401),
            ("404 before the body", "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: \(bodyBytes)\r\n\r\n", body, 404),
        ]
    }

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func earlyRefusalsAreReadByClientsThatSendTheWholeBodyFirst(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        var configuration = testConfiguration(eventLoop)
        configuration.maxBodyBytes = 4 << 20
        try await withServer(configuration, router: Self.router()) { server in
            for refusal in Self.earlyRefusals() {
                let (status, closed, statusBeforeBody) = try await offPool { () -> (Int, Bool, Int) in
                    let client = try RawHTTPClient(port: server.port)
                    try client.send(Array(refusal.head.utf8) + refusal.body)
                    let response = try client.readResponse()
                    // The same refusal for a client that waits for 100-continue: no body sent.
                    let waiting = try RawHTTPClient(port: server.port)
                    try waiting.send(refusal.head.replacingOccurrences(of: "Host: x\r\n", with: "Host: x\r\nExpect: 100-continue\r\n"))
                    return (response.status, client.waitForClose(), try waiting.readResponse().status)
                }
                #expect(status == refusal.status, "\(refusal.name)")
                #expect(closed, "\(refusal.name)")
                #expect(statusBeforeBody == refusal.status, "\(refusal.name)")
            }
            // Each socket lingered until its client closed.
            try await eventually { server.statistics.connectionsLingering == 0 }
            // The connection was the only thing refused: a request within limits is served.
            let accepted = try await offPool {
                try RawHTTPClient(port: server.port).request("POST", "/guarded", headers: [("X-Key", "k")], body: [UInt8](repeating: 1, count: 1000))
            }
            #expect(accepted.status == 200)
            #expect(accepted.text == "stored 1000")
        }
    }

    @Test func aLingeringSocketIsClosedAfterItsByteLimit() async throws {
        var configuration = testConfiguration()
        configuration.lingeringClose = .init(time: .seconds(60), bytes: 256 * 1024)
        try await withServer(configuration, router: Self.router()) { server in
            let outcome = try await offPool { () -> String in
                let client = try RawHTTPClient(port: server.port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n")
                let chunk = [UInt8](repeating: 0x7A, count: 64 * 1024)
                for _ in 0..<16_000 {  // 1 GB: far more than the limit and any buffer
                    do { try client.send(chunk) } catch { return "cut off: \(error)" }
                }
                return "never cut off"
            }
            #expect(outcome.hasPrefix("cut off: send(errno: "))
            try await eventually { server.statistics.connectionsLingering == 0 }
        }
    }

    @Test func aLingeringSocketIsClosedAfterItsTimeLimitEvenIfTheClientStaysOpen() async throws {
        var configuration = testConfiguration()
        configuration.lingeringClose = .init(time: .milliseconds(200), bytes: 1 << 20)
        try await withServer(configuration, router: Self.router()) { server in
            let outcome = try await offPool { () -> [String] in
                let client = try RawHTTPClient(port: server.port)
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
                var log = ["status \(try client.readResponse().status)"]
                log.append(waitFor { server.statistics.connectionsLingering == 1 } ? "lingering" : "never lingered")
                // The client never closes; the server gives up on it.
                log.append(waitFor { server.statistics.connectionsLingering == 0 } ? "given up" : "still lingering")
                for _ in 0..<100 {
                    do { try client.send([UInt8](repeating: 0x7A, count: 1024)) } catch {
                        log.append("reset")
                        return log
                    }
                    Thread.sleep(forTimeInterval: 0.01)
                }
                log.append("still open")
                return log
            }
            #expect(outcome == ["status 413", "lingering", "given up", "reset"])
        }
    }

    @Test func atMostMaxConnectionsSocketsLinger() async throws {
        var configuration = testConfiguration()
        configuration.maxConnections = 3
        configuration.lingeringClose = .init(time: .seconds(60), bytes: 1 << 20)
        try await withServer(configuration, router: Self.router()) { server in
            // Refused clients that never close: the first three linger, the others are closed at once.
            let (statuses, lingering) = try await offPool { () -> ([Int], Int) in
                let clients = try (0..<5).map { _ in try RawHTTPClient(port: server.port) }
                var statuses: [Int] = []
                for client in clients {
                    try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
                    statuses.append(try client.readResponse().status)
                }
                _ = waitFor { server.statistics.connectionsOpen == 0 }
                return withExtendedLifetime(clients) { (statuses, server.statistics.connectionsLingering) }
            }
            #expect(statuses == [413, 413, 413, 413, 413])
            #expect(lingering == 3)
        }
    }
}

/// Waits (blocking, off the cooperative pool) up to thirty seconds for `condition`, a bound far
/// beyond what it should take; returns whether it holds.
func waitFor(_ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .seconds(30)
    while !condition() && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
    return condition()
}
