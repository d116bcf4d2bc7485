import ClientTestSupport
import EngageClient
import Foundation
import Testing

/// The queue's small state files (`retry.json`, `dropped.json`) are read back on every flush;
/// a damaged one holding numbers at the ends of Int must not trap the app, at every launch, in
/// the arithmetic that updates it.
@Suite("Damaged client state files")
struct DamagedStateFilesTests {
    static func write(_ text: String, to name: String, in container: Container) throws {
        let directory = container.url.appendingPathComponent("EngageClient", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: directory.appendingPathComponent(name))
    }

    @Test(arguments: [Int.max, Int.min])
    func aFailureCountAtTheEndsOfIntStillBacksOff(failures: Int) async throws {
        let injector = try FaultInjector(reply: .respond(status: 500, headers: [("Content-Type", "text/plain")], body: "down"))
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: injector.port, key: "egk_x") {
            $0.retry = RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .seconds(300), retryAfterJitter: .milliseconds(100))
        }
        try Self.write(#"{"endpoint":"http://127.0.0.1:\#(injector.port)","not_before_ms":0,"failures":\#(failures)}"#,
                       to: "retry.json", in: container)
        _ = try client.recordDisplayed(notificationID: "n1", category: "c", presentation: .rich, attachmentKind: .gif)

        let report = await client.flush(budget: .seconds(10))

        // Int.max counts as the most failures (the longest backoff: one request in the budget);
        // a negative count as none (short backoffs: a few requests).
        #expect(failures == Int.max ? injector.hits.count == 1 : injector.hits.count >= 1)
        guard case let .backingOff(until) = report.ending else {
            Issue.record("expected to end backing off, got \(report.ending)")
            return
        }
        // At most the longest backoff: the count was taken as a large one, not as a trap.
        #expect(until.timeIntervalSinceNow <= 300.1)
        #expect(client.pending.events == 1)
    }

    @Test func dropCountsAtIntMaxStayThereWhenMoreAreDropped() async throws {
        let injector = try FaultInjector(reply: .respond(
            status: 400, headers: [("Content-Type", "application/problem+json")],
            body: #"{"type":"https://engage.dev/problems/bad-request","status":400}"#))
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: injector.port, key: "egk_x")
        try Self.write(#"{"rejected":0,"refused":\#(Int.max),"overflow":0,"disk_full":0,"expired":0,"unreadable":0}"#,
                       to: "dropped.json", in: container)
        _ = try client.recordDisplayed(notificationID: "n1", category: "c", presentation: .rich, attachmentKind: .gif)

        _ = await client.flush(budget: .seconds(10))

        #expect(injector.hits.count == 1)
        #expect(client.dropCounts.refused == Int.max)
        #expect(client.pending.events == 0)
    }
}
