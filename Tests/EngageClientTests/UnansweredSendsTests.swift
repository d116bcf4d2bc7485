import Foundation
import Testing
@testable import EngageClient

/// The queue's record of events sent without an answer (`unanswered-ids`), read by any process.
@Suite struct UnansweredSendsTests {
    @Test func eachIDIsTakenOnceAndTheFileGoesWhenEmpty() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 60)
        #expect(queue.takeUnanswered(["a"]) == 0)
        queue.markUnanswered(["a", "b"])
        queue.markUnanswered(["b", "c"])
        #expect(container.text("unanswered-ids") == "a\nb\nc\n")
        // Another process's queue on the same container sees them.
        let other = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 60)
        #expect(other.takeUnanswered(["a", "c", "d"]) == 2)
        #expect(queue.takeUnanswered(["a"]) == 0)
        #expect(queue.takeUnanswered(["b"]) == 1)
        #expect(!FileManager.default.fileExists(atPath: container.path("unanswered-ids")))
    }

    @Test func theOldestAreForgottenBeyondTheLimit() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 60)
        let ids = (0...DiskQueue.mostUnansweredIDs).map { "id-\($0)" }
        queue.markUnanswered(ids)
        #expect(queue.takeUnanswered(["id-0"]) == 0)
        #expect(queue.takeUnanswered(["id-1", "id-\(DiskQueue.mostUnansweredIDs)"]) == 2)
    }
}
