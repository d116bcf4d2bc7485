import Foundation
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
