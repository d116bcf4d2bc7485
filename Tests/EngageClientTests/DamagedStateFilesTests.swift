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

    /// Beyond Int either way or not a whole number, the count is read as the most (a count past
    /// every backoff's cap) or as none: a boolean or a fraction makes no count of 1 or 2.
    @Test(arguments: [("\(Int.max)", true), ("1e300", true), ("18446744073709551615", true), ("\(Int.min)", false),
                      ("-1e300", false), ("true", false), ("2.5", false)])
    func aFailureCountAtTheEndsOfIntStillBacksOff(failures: String, readAsMost: Bool) async throws {
        let injector = try FaultInjector(reply: .respond(status: 500, headers: [("Content-Type", "text/plain")], body: "down"))
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: injector.port, key: "egk_x") {
            // A first backoff beyond the flush's budget: one request, then the flush ends backing
            // off, however slow the machine (short backoffs could let the budget run out first).
            $0.retry = RetryPolicy(initialDelay: .seconds(120), maxDelay: .seconds(300), retryAfterJitter: .milliseconds(100))
        }
        try Self.write(#"{"endpoint":"http://127.0.0.1:\#(injector.port)","not_before_ms":0,"failures":\#(failures)}"#,
                       to: "retry.json", in: container)
        _ = try client.recordDisplayed(notificationID: "n1", category: "c", presentation: .rich, attachmentKind: .gif)

        let report = await client.flush(budget: .seconds(10))

        // The most failures back off longest; none, by at most the initial delay.
        #expect(injector.hits.count == 1)
        guard case let .backingOff(until) = report.ending else {
            Issue.record("expected to end backing off, got \(report.ending)")
            return
        }
        // At most the longest backoff: the count was taken as a large one, not as a trap.
        #expect(until.timeIntervalSinceNow <= 300.1)
        #expect(readAsMost ? until.timeIntervalSinceNow > 140 : until.timeIntervalSinceNow <= 120.1)
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

    /// Counts that are not whole numbers (a boolean, a fraction, a negative, one beyond Int) read
    /// as none, not as 1, 2 or a negative count.
    @Test func dropCountsThatAreNotWholeNumbersReadAsNone() throws {
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: 9, key: "egk_x")
        try Self.write(#"{"rejected":true,"refused":2.5,"overflow":-3,"disk_full":7,"expired":1e300,"unreadable":18446744073709551615}"#,
                       to: "dropped.json", in: container)
        var expected = DropCounts()
        expected.diskFull = 7
        #expect(client.dropCounts == expected)
    }

    /// The index in the lock file, as a damaged one could read (fixed width, as the queue writes it).
    @Test(arguments: [
        "engage-queue 1 head=00000000000000000001 events=0000000000 bytes=09223372036854775807\n",
        "engage-queue 1 head=09223372036854775807 events=0000009999 bytes=00000000000000000000\n",
    ])
    func anIndexAtTheEndsOfInt64IsRebuiltFromTheFiles(index: String) async throws {
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: 9, key: "egk_x")
        try Self.write(index, to: "queue.lock", in: container)

        _ = try client.recordDisplayed(notificationID: "n1", category: "c", presentation: .rich, attachmentKind: .gif)
        _ = try client.recordDisplayed(notificationID: "n2", category: "c", presentation: .rich, attachmentKind: .gif)

        #expect(client.pending.events == 2)
    }

    /// A claim whose name says it was made at the very start of Int64's milliseconds: far in the
    /// past, so it comes back to be sent.
    @Test func aClaimStampedAtInt64MinComesBack() async throws {
        let injector = try FaultInjector(reply: .respond(status: 500, headers: [("Content-Type", "text/plain")], body: "down"))
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: injector.port, key: "egk_x")
        let claimed = container.url.appendingPathComponent("EngageClient/claimed", isDirectory: true)
        try FileManager.default.createDirectory(at: claimed, withIntermediateDirectories: true)
        let line = #"{"event_id":"00000000-0000-4000-8000-000000000001","occurred_at":"\#(ISO8601DateFormatter().string(from: Date()))"}"#
        try Data((line + "\n").utf8).write(to: claimed.appendingPathComponent("00000000000000000001~1~\(Int64.min).ndjson"))

        _ = await client.flush(budget: .seconds(5))

        #expect(injector.hits.count >= 1)
        #expect(client.pending.claimedFiles == 0)
    }

    /// A segment whose size says a terabyte (a sparse file; nothing the queue writes comes near
    /// it) must not size an allocation: it is set aside as unreadable, and sending goes on.
    @Test func aSegmentOfATerabyteIsQuarantinedNotRead() async throws {
        let injector = try FaultInjector(reply: .respond(status: 500, headers: [("Content-Type", "text/plain")], body: "down"))
        defer { injector.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: injector.port, key: "egk_x")
        let ready = container.url.appendingPathComponent("EngageClient/ready", isDirectory: true)
        try FileManager.default.createDirectory(at: ready, withIntermediateDirectories: true)
        let huge = ready.appendingPathComponent("00000000000000000001.ndjson").path
        #expect(FileManager.default.createFile(atPath: huge, contents: nil))
        #expect(truncate(huge, 1 << 40) == 0)

        _ = await client.flush(budget: .seconds(5))

        #expect(client.dropCounts.unreadable == 1)
        #expect(!FileManager.default.fileExists(atPath: huge))
        let quarantine = container.url.appendingPathComponent("EngageClient/quarantine").path
        #expect(try FileManager.default.contentsOfDirectory(atPath: quarantine).count == 1)
    }
}
