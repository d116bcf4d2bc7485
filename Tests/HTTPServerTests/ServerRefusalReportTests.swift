import Foundation
import Synchronization
import Testing

@testable import HTTPServer
import TestSupport

/// The server's own refusals (headers over their limit, a body over it, declared or as it came)
/// never reach a route: the responder is told of each, so that requests are counted by status
/// with the others (engage_http_requests_total left them out).
@Suite(.serialized, .timeLimit(.minutes(2))) struct ServerRefusalReportTests {
    /// A router that also notes the server's own refusals.
    struct NotingResponder: HTTPResponder {
        let router: Router
        let refused = RefusedStatuses()

        func respond(to request: HTTPRequest) async -> HTTPResponse { await router.respond(to: request) }
        func didRefuse(_ request: HTTPRequest, with response: HTTPResponse) {
            refused.append(request.path, response.status)
        }
    }

    final class RefusedStatuses: Sendable {
        private let seen = Mutex<[String]>([])
        func append(_ path: String, _ status: Int) { seen.withLock { $0.append("\(path) \(status)") } }
        var all: [String] { seen.withLock { $0 } }
    }

    @Test func theServersOwnRefusalsAreReported() async throws {
        let responder = NotingResponder(router: testRouter())
        let server = try HTTPServer(configuration: testConfiguration(), responder: responder)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let statuses = try await offPool { () -> [Int] in
                let chunk = "8000\r\n" + String(repeating: "c", count: 0x8000) + "\r\n"
                let chunked = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + String(repeating: chunk, count: 3) + "0\r\n\r\n"
                let declared = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
                let headers = "GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "h", count: 9000))\r\n\r\n"
                return try [chunked, declared, headers].map { request in
                    let client = try RawHTTPClient(port: server.port)
                    try client.send(Array(request.utf8))
                    return try client.readResponse().status
                }
            }
            #expect(statuses == [413, 413, 431])
            #expect(responder.refused.all == ["/echo 413", "/echo 413", "/echo 431"])
            group.cancelAll()
            try await group.waitForAll()
        }
    }
}
