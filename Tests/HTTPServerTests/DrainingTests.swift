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

    /// libmicrohttpd 0.9.75 aborts the process when a daemon is stopped with a connection still
    /// suspended. A responder that has taken a suspended request's answer resumes its connection a
    /// moment later; if it loses the CPU in between for longer than the shutdown's bounded wait
    /// (2 s), the daemon used to be stopped under it. Here the responder stalls there for 3 s while
    /// the server shuts down: before the shutdown waited for it, the test process aborted
    /// ("MHD_stop_daemon() called while we have suspended connections"). Now the shutdown waits,
    /// and the answer still reaches the client.
    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func aShutdownWaitsForAResponderThatStallsBeforeResumingItsConnection(
        eventLoop: HTTPServer.Configuration.EventLoop
    ) async throws {
        let stallsBegun = Atomic(0)
        let stallsEnded = Atomic(0)
        let hold = Hold()
        var configuration = testConfiguration(eventLoop)
        configuration.shutdownGrace = .milliseconds(50)
        let server = try HTTPServer(
            configuration: configuration, responder: testRouter(hold: hold), log: nil, daemonLog: nil,
            beforeResuming: {
                stallsBegun.add(1, ordering: .relaxed)
                var interval = timespec(tv_sec: 3, tv_nsec: 0)
                _ = nanosleep(&interval, nil)
                stallsEnded.add(1, ordering: .releasing)
            })
        let port = server.port
        let running = Task { try await server.run() }
        let client = Task { try await offPool { try RawHTTPClient(port: port).request("GET", "/slow") } }
        try await eventually { server.core.suspendedCount == 1 }
        hold.release()
        try await eventually { stallsBegun.load(ordering: .relaxed) == 1 }
        running.cancel()
        try await running.value

        #expect(stallsEnded.load(ordering: .acquiring) == 1, "the daemons were stopped while the responder had not resumed")
        #expect(stallsBegun.load(ordering: .relaxed) == 1)
        #expect(server.statistics.requestsInFlight == 0)
        let answer = try await client.value
        #expect(answer.status == 200)
        #expect(answer.text == "done")
        #expect(throws: RawHTTPClient.Failure.connect(errno: ECONNREFUSED)) { try RawHTTPClient(port: port) }
    }
}
