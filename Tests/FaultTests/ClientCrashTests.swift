import EmbeddedPostgres
import EngageClient
import Foundation
import Postgres
import Testing
import TestSupport

@Suite("Faults: the client's process killed while its queue holds events")
struct ClientCrashTests {
    /// A process standing in for an app extension records events one by one and is killed with
    /// SIGKILL: `hold` only records, and is killed at a random moment; `send` also sends every ten
    /// events, and is killed while it holds a claimed file (a request in flight, or answered and
    /// not yet completed). A new client on the same container then delivers what is left: every
    /// event the killed process had recorded is stored exactly once.
    @Test(.timeLimit(.minutes(2)), arguments: ["hold", "send"])
    func eventsOfAKilledProcessAreDeliveredOnceByTheNext(mode: String) async throws {
        let workspace = try FaultWorkspace("client-\(mode)")
        defer { workspace.remove() }
        let server = try TestServer()
        let key = try await server.key()
        let container = URL(fileURLWithPath: workspace.file("container"))
        let endpoint = URL(string: "http://127.0.0.1:\(server.port)")!
        let probe = try ChildProcess(
            [try BuiltProgram.path("EngageClientProbe"), container.path, endpoint.absoluteString, key, mode],
            environment: ["PATH": "/usr/bin:/bin", "HOME": workspace.path], outputPath: workspace.file("probe.log"))

        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        while Self.recordedIDs(probe.output).count < 60 {
            guard probe.isRunning, ContinuousClock.now < deadline else {
                throw FaultTestError("the probe recorded too few events", log: probe.output)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        if mode == "send" {
            let claimed = container.appendingPathComponent("EngageClient/claimed").path
            while ((try? FileManager.default.contentsOfDirectory(atPath: claimed)) ?? []).isEmpty {
                guard probe.isRunning, ContinuousClock.now < deadline else {
                    throw FaultTestError("the probe never claimed a file to send", log: probe.output)
                }
                try await Task.sleep(for: .microseconds(200))
            }
        } else {
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...300)))
        }
        probe.signal(SIGKILL)
        #expect(await probe.waitForExit(timeout: .seconds(10)) == 128 + SIGKILL)
        let recorded = Self.recordedIDs(probe.output)
        let sentBeforeTheKill = try await server.count("SELECT count(*) FROM events")
        #expect(mode == "send" ? sentBeforeTheKill > 0 : sentBeforeTheKill == 0)

        let next = try EngageClient(configuration: EngageClient.Configuration(
            endpoint: endpoint, ingestKey: key, containerDirectory: container, deviceID: "next-process",
            requestTimeout: .seconds(1), claimLease: .seconds(1),
            retry: RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(200))))
        // The killed process's claimed files come back once their lease has run out.
        while true {
            let stored = try await server.count("SELECT count(*) FROM events")
            if next.pending == (0, 0, 0) && stored >= recorded.count { break }
            guard ContinuousClock.now < deadline else { throw FaultTestError("the queue was not drained: \(next.pending)") }
            await next.flush(budget: .seconds(5))
            try await Task.sleep(for: .milliseconds(50))
        }

        #expect(try await server.count("SELECT count(*) FROM events WHERE event_id = ANY(\(recorded))") == recorded.count)
        let total = try await server.count("SELECT count(*) FROM events")
        #expect(total == (try await server.count("SELECT count(DISTINCT event_id) FROM events")))
        // At most one more: recorded, then killed before it could print the id.
        #expect(total == recorded.count || total == recorded.count + 1)
        await server.stop()
    }

    /// The ids the probe printed, each once `record` had returned.
    static func recordedIDs(_ output: String) -> [UUID] {
        output.split(separator: "\n").compactMap { line in
            line.hasPrefix("recorded ") ? UUID(uuidString: String(line.dropFirst("recorded ".count))) : nil
        }
    }
}
