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

    /// With `maxQueueBytes` above the 64 MiB a segment may hold and still be read, one large event
    /// took the head segment past it, and the claim set the segment aside as unreadable with the
    /// events recorded before it. The large event now starts a segment of its own, and one that no
    /// segment could hold is refused, as one over `maxQueueBytes` is.
    @Test func aLargeEventNeverMakesItsSegmentUnreadable() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try QueueTests.queue(container, maxBytes: 200 << 20, segmentEvents: 100)
        try queue.append([QueueTests.event(1)])
        let padding = String(repeating: "x", count: QueueFiles.largestReadBytes - 100)
        let large = DiskQueue.QueuedEvent(id: QueueTests.event(2).id,
                                          json: #"{"event_id":"\#(QueueTests.event(2).id)","pad":"\#(padding)"}"#)
        // Alone it fits a segment; with the first event's line it would not.
        #expect(large.json.utf8.count + 1 <= QueueFiles.largestReadBytes)
        #expect(large.json.utf8.count + 1 + QueueTests.event(1).json.utf8.count + 1 > QueueFiles.largestReadBytes)
        #expect(try queue.append([large]).dropped.isEmpty)
        let claimed = queue.claim(maxEvents: 10, now: QueueTests.now)
        #expect(claimed.claims.flatMap(\.events).map(\.id) == [QueueTests.event(1).id, large.id])
        #expect(queue.dropCounts.unreadable == 0)

        let tooLarge = DiskQueue.QueuedEvent(id: QueueTests.event(3).id,
                                             json: #"{"event_id":"\#(QueueTests.event(3).id)","pad":"\#(padding)\#(padding)"}"#)
        #expect(throws: QueueError.self) { try queue.append([tooLarge]) }
    }

    /// An event recorded once and then dropped by overflow before it was sent may be recorded
    /// again (a later sweep finds its notification still in Notification Center): the queue
    /// forgets its id. Those still waiting are still skipped.
    @Test func anEventOverflowDroppedMayBeRecordedAgain() throws {
        let container = Container()
        defer { container.remove() }
        let size = QueueTests.event(1).json.utf8.count + 1
        let queue = try QueueTests.queue(container, maxBytes: size * 3, segmentEvents: 1)
        for number in 1...3 { try queue.append([QueueTests.event(number)], onceID: QueueTests.event(number).id) }
        let dropped = try queue.append([QueueTests.event(4)]).dropped
        #expect(dropped.overflow == [QueueTests.event(1).id])
        #expect(try queue.append([QueueTests.event(3)], onceID: QueueTests.event(3).id).alreadyRecorded)
        let again = try queue.append([QueueTests.event(1)], onceID: QueueTests.event(1).id)
        #expect(!again.alreadyRecorded && again.dropped.overflow == [QueueTests.event(2).id])
        #expect(queue.eventIDs() == [3, 4, 1].map { QueueTests.event($0).id })
        #expect(!container.text("recent-ids").contains(QueueTests.event(2).id))
    }

    /// Counting what overflow dropped can fail for another reason than a full disk (here
    /// `dropped.json` is a directory, so its new text cannot be renamed over it): only a full disk
    /// is a reason to drop more to make room for the count. The events overflow dropped are still
    /// reported, and every other waiting event stays.
    @Test func aCountThatCannotBeWrittenOnAFreeDiskDropsNothingMore() throws {
        let container = Container()
        defer { container.remove() }
        let size = QueueTests.event(1).json.utf8.count + 1
        let queue = try QueueTests.queue(container, maxBytes: size * 6, segmentEvents: 1)
        for number in 1...6 { #expect(try queue.append([QueueTests.event(number)]).dropped.isEmpty) }
        try FileManager.default.createDirectory(atPath: container.path("dropped.json"), withIntermediateDirectories: false)

        let dropped = try queue.append([QueueTests.event(7)]).dropped

        #expect(dropped.overflow == [QueueTests.event(1).id])
        #expect(dropped.diskFull.isEmpty)
        #expect(queue.claim(maxEvents: 10, now: QueueTests.now).claims.flatMap(\.events).map(\.id)
                == (2...7).map { QueueTests.event($0).id })
    }

    /// An event larger than the queue's whole limit could only be queued by dropping every
    /// waiting event, and would pass the limit still: it is refused, and nothing is dropped for it.
    @Test func anEventLargerThanTheQueueIsRefusedWithoutDroppingAny() throws {
        let container = Container()
        defer { container.remove() }
        let size = QueueTests.event(1).json.utf8.count + 1
        let queue = try QueueTests.queue(container, maxBytes: size * 4, segmentEvents: 2)
        for number in 1...3 { try queue.append([QueueTests.event(number)]) }
        let huge = DiskQueue.QueuedEvent(id: "huge", json: #"{"event_id":"huge","pad":""# + String(repeating: "x", count: size * 4) + #""}"#)

        #expect { try queue.append([huge]) } throws: { ($0 as? QueueError)?.code == .tooLarge }

        #expect(queue.dropCounts == DropCounts())
        #expect(queue.claim(maxEvents: 10, now: QueueTests.now).claims.flatMap(\.events).map(\.id)
                == (1...3).map { QueueTests.event($0).id })
    }

    /// A write that fails for another reason than a full disk (here the next segment's name is
    /// taken by a directory) after overflow dropped the oldest to make room: those events are
    /// gone, so they are reported and counted all the same (they were lost in silence).
    @Test func eventsOverflowDroppedBeforeAFailedWriteAreReported() throws {
        let container = Container()
        defer { container.remove() }
        let size = QueueTests.event(1).json.utf8.count + 1
        let queue = try QueueTests.queue(container, maxBytes: size * 2, segmentEvents: 1)
        for number in 1...2 { try queue.append([QueueTests.event(number)]) }
        try FileManager.default.createDirectory(atPath: container.path("ready/00000000000000000003.ndjson"),
                                                withIntermediateDirectories: false)

        #expect {
            try queue.append([QueueTests.event(3)])
        } throws: { error in
            guard let failed = error as? DiskQueue.AppendFailed else { return false }
            return failed.dropped.overflow == [QueueTests.event(1).id] && (failed.cause as? QueueError)?.code != .diskFull
        }
        #expect(queue.dropCounts.overflow == 1)
    }

    /// A segment that can never be read (here larger than any the queue writes, as a damaged or
    /// sparse file would be) is dropped by overflow like any other, and reported and counted as
    /// unreadable, as a claim reports it: its events are gone, so it is not dropped in silence.
    @Test func anUnreadableSegmentDroppedByOverflowIsReported() throws {
        let container = Container()
        defer { container.remove() }
        let size = QueueTests.event(1).json.utf8.count + 1
        let queue = try QueueTests.queue(container, maxBytes: size * 4, segmentEvents: 2)
        for number in 1...4 { try queue.append([QueueTests.event(number)]) }
        let oldest = container.path("ready/00000000000000000001.ndjson")
        #expect(truncate(oldest, off_t(QueueFiles.largestReadBytes + 1)) == 0)

        let dropped = try queue.append([QueueTests.event(5)]).dropped

        #expect(dropped.overflow.isEmpty)
        #expect(dropped.unreadable == ["file 00000000000000000001.ndjson: errno \(EFBIG)"])
        #expect(queue.dropCounts.unreadable == 1)
        #expect(queue.claim(maxEvents: 10, now: QueueTests.now).claims.flatMap(\.events).map(\.id)
                == [3, 4, 5].map { QueueTests.event($0).id })
    }
}
