import Foundation
import Synchronization
import Testing

@testable import HTTPServer
import TestSupport

/// Requests a responder takes on the daemon thread (`respondInline`) instead of in a task.
@Suite(.serialized, .timeLimit(.minutes(1))) struct InlineResponderTests {
    /// Replies kept by a handler that answers later, or never.
    final class KeptReplies: Sendable {
        private let replies = Mutex<[HTTPReply]>([])
        func keep(_ reply: HTTPReply) { replies.withLock { $0.append(reply) } }
        var count: Int { replies.withLock { $0.count } }
    }

    static func router(kept: KeptReplies = KeptReplies()) -> Router {
        var router = Router()
        router.post("/inline", inline: { request, reply in
            switch String(decoding: request.body, as: UTF8.self) {
            case "now":
                reply.send(.text("now"))
            case "twice":
                reply.send(.text("first"))
                reply.send(.text("second"))
            case "sent, then declined":
                reply.send(.text("sent"))
                return false
            case "later":
                Thread {
                    Thread.sleep(forTimeInterval: 0.05)
                    reply.send(.text("later from another thread"))
                }.start()
            case "never":
                kept.keep(reply)
            default:
                return false
            }
            return true
        }) { request in
            .text("task: " + String(decoding: request.body, as: UTF8.self))
        }
        return router
    }

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func takenRequestsAreAnsweredThroughTheReplyAndDeclinedOnesByTheTask(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        try await withServer(testConfiguration(eventLoop), router: Self.router()) { server in
            let responses = try await offPool {
                let client = try RawHTTPClient(port: server.port)
                return try ["now", "later", "decline", "twice", "sent, then declined", "now"].map {
                    try client.request("POST", "/inline", body: Array($0.utf8))
                }
            }
            #expect(responses.map(\.status) == [200, 200, 200, 200, 200, 200])
            // A second send is ignored; a reply sent before declining still counts as taken.
            #expect(responses.map(\.text) == ["now", "later from another thread", "task: decline", "first", "sent", "now"])
            try await eventually { server.statistics.requestsCompleted == 6 }
            #expect(server.statistics.requestsTakenInline == 5)
            #expect(server.statistics.connectionsAccepted == 1)
        }
    }

    @Test func unmatchedRequestsNeverReachAnInlineHandler() async throws {
        try await withServer(router: Self.router()) { server in
            // Refused before their bodies, so each closes its connection.
            let (missing, wrongMethod) = try await offPool {
                (try RawHTTPClient(port: server.port).request("POST", "/elsewhere", body: Array("now".utf8)),
                 try RawHTTPClient(port: server.port).request("PUT", "/inline", body: Array("now".utf8)))
            }
            #expect(missing.status == 404)
            #expect(wrongMethod.status == 405)
            #expect(server.statistics.requestsTakenInline == 0)
        }
    }

    @Test func aTakenRequestNeverAnsweredGets503WhenTheServerStops() async throws {
        let kept = KeptReplies()
        var configuration = testConfiguration()
        configuration.shutdownGrace = .milliseconds(300)
        let server = try HTTPServer(configuration: configuration, responder: Self.router(kept: kept))
        let port = server.port
        let running = Task { try await server.run() }
        async let pending = offPool { try RawHTTPClient(port: port).request("POST", "/inline", body: Array("never".utf8)) }
        try await eventually { kept.count == 1 }
        running.cancel()
        let response = try await pending
        #expect(response.status == 503)
        #expect(response.headers["Content-Type"] == "application/problem+json")
        try await running.value
        #expect(server.statistics.requestsInFlight == 0)
    }
}
