import EngageAPI
import Foundation
import Glibc
import HTTPServer
import Testing
import TestSupport

/// The transport limits engage configures, over real sockets: header size, connection count,
/// connections per client address. Body size: IngestStatusTests and the hostile corpus.
@Suite("Server limits", .serialized)
struct ServerLimitsTests {
    @Test(.timeLimit(.minutes(1)))
    func oversizedHeadersGet431WhileAnotherClientKeepsBeingServed() async throws {
        try await TestServer.withServer(configure: { $0.http.maxHeaderBytes = 2048 }) { server in
            let port = server.port
            let key = try await server.key(app: uniqueApp("limits"))
            let outcome = try await offPool { () -> [String] in
                var log: [String] = []
                // A client in the middle of a keep-alive conversation.
                let steady = try RawHTTPClient(port: port)
                log.append("steady \(try steady.request("GET", "/healthz").status)")
                let over = try RawHTTPClient(port: port).request("GET", "/v1/report", headers: [
                    ("Authorization", "Bearer \(key)"), ("X-Padding", String(repeating: "p", count: 3000)),
                ])
                log.append("over \(over.status) \(over.text)")
                log.append("steady \(try steady.request("GET", "/healthz").status)")
                // Far over: libmicrohttpd's memory limit cuts it off, with a 431 or by closing.
                let farOver = try RawHTTPClient(port: port)
                do {
                    let response = try farOver.request("GET", "/healthz", headers: (0..<50).map { ("X-Padding-\($0)", String(repeating: "q", count: 4000)) })
                    log.append("farOver \(response.status)")
                } catch RawHTTPClient.Failure.closed {
                    log.append("farOver closed")
                } catch RawHTTPClient.Failure.send(let error) where error == EPIPE || error == ECONNRESET {
                    log.append("farOver closed")
                }
                log.append("steady \(try steady.request("GET", "/healthz").status)")
                return log
            }
            #expect(outcome[0] == "steady 200")
            #expect(outcome[1] == "over 431 " + HTTPProblem.headersTooLarge(limit: 2048).json)
            #expect(outcome[2] == "steady 200")
            #expect(outcome[3] == "farOver 431" || outcome[3] == "farOver closed")
            #expect(outcome[4] == "steady 200")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func connectionsBeyondTheLimitAreNotServedWhileOpenOnesAre() async throws {
        try await TestServer.withServer(configure: {
            $0.http.maxConnections = 4
            $0.http.threading = .threadPool(1)
        }) { server in
            let port = server.port
            let outcome = try await offPool { () -> [String] in
                var log: [String] = []
                var open = try (0..<4).map { _ in try RawHTTPClient(port: port) }
                for client in open { log.append("open \(try client.request("GET", "/healthz").status)") }
                // The kernel completes the handshake, but libmicrohttpd takes no fifth connection:
                // it waits in the listen backlog, unanswered.
                let extra = try RawHTTPClient(port: port, receiveTimeout: 1)
                log.append("extra " + Self.outcome { try extra.request("GET", "/healthz") })
                for client in open { log.append("open \(try client.request("GET", "/healthz").status)") }
                // Closing one lets the waiting connection in, and its request is answered.
                open.removeFirst()
                for _ in 0..<20 {
                    do {
                        log.append("extra later \(try extra.readResponse().status)")
                        break
                    } catch RawHTTPClient.Failure.timedOut {
                        continue
                    }
                }
                for client in open { log.append("open \(try client.request("GET", "/healthz").status)") }
                return log
            }
            #expect(outcome == Array(repeating: "open 200", count: 4) + ["extra timedOut"] + Array(repeating: "open 200", count: 4)
                    + ["extra later 200"] + Array(repeating: "open 200", count: 3))
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func connectionsPerAddressAreCapped() async throws {
        try await TestServer.withServer(configure: { $0.http.maxConnectionsPerAddress = 2 }) { server in
            let port = server.port
            let outcome = try await offPool { () -> [String] in
                var log: [String] = []
                let open = try (0..<2).map { _ in try RawHTTPClient(port: port) }
                for client in open { log.append("open \(try client.request("GET", "/healthz").status)") }
                let extra = try RawHTTPClient(port: port, receiveTimeout: 2)
                log.append("extra " + Self.outcome { try extra.request("GET", "/healthz") })
                for client in open { log.append("open \(try client.request("GET", "/healthz").status)") }
                return log
            }
            #expect(outcome == ["open 200", "open 200", "extra closed", "open 200", "open 200"])
        }
    }

    /// The status, or how the client failed (`timedOut`, `closed`, ...).
    static func outcome(_ exchange: () throws -> RawHTTPClient.Response) -> String {
        do {
            return String(try exchange().status)
        } catch let failure as RawHTTPClient.Failure {
            return "\(failure)"
        } catch {
            return "\(error)"
        }
    }
}
