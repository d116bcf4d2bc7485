import ClientTestSupport
import Foundation
import Synchronization
import Testing
@testable import EngageClient

@Suite("Disk queue: the shared retry state")
struct RetryStateTests {
    /// Two flushes of one process back off at the same time: every write of `retry.json` is
    /// whole, so a reader always finds a backoff (never a garbled file, whose backoff would be
    /// ignored).
    @Test func writersInOneProcessNeverGarbleTheRetryState() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try QueueTests.queue(container)
        let start = Date(timeIntervalSince1970: 1_795_979_783)
        queue.setRetryState(.init(endpoint: "https://e.example", notBefore: start, failures: 1))
        let unreadable = Recorder<Int>()
        DispatchQueue.concurrentPerform(iterations: 8) { writer in
            for round in 0..<1000 {
                queue.setRetryState(.init(endpoint: "https://e.example", notBefore: start + Double(round), failures: round + 1))
                if queue.retryState(endpoint: "https://e.example") == nil { unreadable.add(writer * 1000 + round) }
            }
        }
        #expect(unreadable.all.isEmpty, "unreadable after \(unreadable.all.count) of 8000 writes; retry.json: \(container.text("retry.json"))")
        #expect(queue.retryState(endpoint: "https://e.example") != nil)
        #expect(container.files("").filter { $0.contains(".tmp") }.isEmpty)
    }

    /// A shorter backoff never replaces a longer wait another sender set (its Retry-After), and an
    /// answer to a request sent before that wait does not clear it; a wait further ahead than
    /// any backoff (the clock was set back) is not kept.
    @Test func aWaitAnotherSenderSetOutlivesShorterBackoffsAndEarlierAnswers() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try QueueTests.queue(container)
        let endpoint = "https://e.example", now = Date(timeIntervalSince1970: 1_795_979_783)
        queue.recordFailure(endpoint: endpoint, now: now, longestWait: 300) { _ in 30 }
        queue.recordFailure(endpoint: endpoint, now: now + 1, longestWait: 300) { _ in 1 }
        #expect(queue.retryState(endpoint: endpoint) == .init(endpoint: endpoint, notBefore: now + 30, failures: 2))
        queue.clearRetryState(answeringRequestSentAt: now + 0.5, endpoint: endpoint)
        #expect(queue.retryState(endpoint: endpoint)?.notBefore == now + 30)
        queue.clearRetryState(answeringRequestSentAt: now + 31, endpoint: endpoint)
        #expect(queue.retryState(endpoint: endpoint) == nil)

        queue.setRetryState(.init(endpoint: endpoint, notBefore: now + 10_000, failures: 1))
        queue.recordFailure(endpoint: endpoint, now: now, longestWait: 300) { _ in 2 }
        #expect(queue.retryState(endpoint: endpoint) == .init(endpoint: endpoint, notBefore: now + 2, failures: 2))
    }

    /// Another sender's 429 (Retry-After 30 s) is recorded while this flush's request is on its
    /// way; this request's 200 then cleared the shared backoff, and both senders went again at
    /// once, before the Retry-After.
    @Test func anAnswerKeepsAWaitAnotherSenderRecordedMeanwhile() async throws {
        let shared = Mutex<(queue: DiskQueue, endpoint: String)?>(nil)
        let proxy = try FaultInjector(reply: .answer { _ in
            shared.withLock { pair in
                guard let pair else { return }
                pair.queue.recordFailure(endpoint: pair.endpoint, now: Date(), longestWait: 300) { _ in 30 }
            }
            return (200, [("Content-Type", "application/json")], #"{"accepted":1,"duplicates":0,"rejected":[]}"#)
        })
        defer { proxy.stop() }
        let container = Container()
        defer { container.remove() }
        let client = try makeClient(container, port: proxy.port, key: "egk_x")
        let endpoint = "http://127.0.0.1:\(proxy.port)"
        shared.withLock { $0 = (client.queue, endpoint) }
        _ = try client.recordExpanded(notificationID: "n1", category: "new_photo")

        let report = await client.flush(budget: .seconds(10))
        #expect(report.requests == 1 && report.accepted == 1 && report.dropped == 0, "\(report)")
        #expect(client.pending.events == 0)
        // The flush, asked to go on, finds the other sender's wait rather than an empty queue.
        let wait = try #require(client.queue.retryState(endpoint: endpoint))
        #expect(wait.notBefore.timeIntervalSinceNow > 20, "\(wait)")
        #expect(report.ending == .backingOff(until: wait.notBefore), "\(report)")
    }

    /// Failures counted by senders at the same time all count: the next backoff grows with each.
    @Test func failuresRecordedTogetherAllCount() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try QueueTests.queue(container)
        let now = Date(timeIntervalSince1970: 1_795_979_783)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<25 { queue.recordFailure(endpoint: "https://e.example", now: now) { Double($0) } }
        }
        #expect(queue.retryState(endpoint: "https://e.example") == .init(endpoint: "https://e.example",
                                                                         notBefore: now + 200, failures: 200))
    }
}
