import Foundation
import Testing
@testable import EngageClient

@Suite("Disk queue: what overflow drops")
struct OverflowTests {
    /// Overflow drops the oldest segment whole; a line in it that is not an event (a fragment,
    /// corruption) is dropped with it, and is reported and counted as unreadable, as a claim
    /// would have: nothing leaves the queue unreported.
    @Test func unreadableLinesDroppedByOverflowAreReported() throws {
        let container = Container()
        defer { container.remove() }
        let size = QueueTests.event(1).json.utf8.count + 1
        let queue = try QueueTests.queue(container, maxBytes: size * 4, segmentEvents: 2)
        try queue.append([QueueTests.event(1), .init(id: "?", json: "{not json")])
        try queue.append([QueueTests.event(2)])
        let dropped = try queue.append([QueueTests.event(3), QueueTests.event(4)]).dropped
        #expect(dropped.overflow == [QueueTests.event(1).id])
        #expect(dropped.unreadable == ["{not json"])
        #expect(queue.dropCounts.overflow == 1 && queue.dropCounts.unreadable == 1)
        #expect(container.text("quarantine/00000000000000000001-lines") == "{not json\n")
        #expect(queue.claim(maxEvents: 10, now: QueueTests.now).claims.flatMap(\.events).map(\.id)
                == [2, 3, 4].map { QueueTests.event($0).id })
    }
}
