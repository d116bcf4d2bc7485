import Foundation
import Glibc
import Synchronization
import Testing

@testable import HTTPServer
import TestSupport

/// Clients that open a connection, send one request and close it, over and over, until stopped.
private final class ConnectionChurn: Sendable {
    private let stopping = Atomic(false)
    private let answered = Atomic(0)
    private let running = DispatchGroup()

    init(port: Int, clients: Int) {
        for _ in 0..<clients {
            running.enter()
            Thread { [self] in
                defer { running.leave() }
                while !stopping.load(ordering: .relaxed) {
                    if (try? RawHTTPClient(port: port).request("GET", "/hello/churn")) != nil {
                        answered.add(1, ordering: .relaxed)
                    } else {
                        // Turned away: the server is draining or gone; no need to spin.
                        usleep(1_000)
                    }
                }
            }.start()
        }
    }

    var answers: Int { answered.load(ordering: .relaxed) }

    func stop() async throws {
        stopping.store(true, ordering: .relaxed)
        try await offPool { self.running.wait() }
    }
}

@Suite(.serialized, .timeLimit(.minutes(3))) struct DrainingTests {
    /// libmicrohttpd 0.9.75 aborts the process ("Failed to remove listen FD from epoll set") when
    /// an epoll daemon is quiesced while its threads are busy. The race is narrow, so this can only
    /// make it likely: before the server stopped quiescing epoll daemons, this test aborted in 2
    /// runs of 6 (the poll side never did). Shutting down soon after the first answer, while
    /// connections keep arriving, is what hit it most often.
    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func shuttingDownWhileConnectionsArriveNeverAbortsTheProcess(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        for _ in 0..<300 {
            let server = try HTTPServer(configuration: testConfiguration(eventLoop), responder: testRouter())
            let port = server.port
            let running = Task { try await server.run() }
            let churn = ConnectionChurn(port: port, clients: 3)
            try await pollUntil(every: .milliseconds(1)) { churn.answers >= 1 }
            running.cancel()
            try await running.value
            try await churn.stop()
            #expect(throws: RawHTTPClient.Failure.connect(errno: ECONNREFUSED)) { try RawHTTPClient(port: port) }
            #expect(server.statistics.requestsInFlight == 0)
        }
    }
}
