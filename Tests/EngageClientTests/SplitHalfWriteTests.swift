import Foundation
import Synchronization
import Testing
import TestSupport
@testable import EngageClient

/// What `claimed/` holds each time the queue creates a file, the moment a process killed there
/// would leave on disk.
final class ClaimedSnapshots: Sendable {
    private let lock = Mutex<[[String: [UInt8]]]>([])
    private let armed = Mutex(false)

    func arm(_ on: Bool) { armed.withLock { $0 = on } }

    func take(_ container: Container) {
        guard armed.withLock({ $0 }) else { return }
        var snapshot: [String: [UInt8]] = [:]
        for name in container.files("claimed") where name.hasSuffix(DiskQueue.suffix) {
            snapshot[name] = Array(container.text("claimed/" + name).utf8)
        }
        lock.withLock { $0.append(snapshot) }
    }

    var all: [[String: [UInt8]]] { lock.withLock { $0 } }
}

@Suite("Disk queue: writing a split's halves")
struct SplitHalfWriteTests {
    /// A process killed while `split` writes a half must leave no segment under a claimable name
    /// that is not whole: a half cut short would be claimed, and its cut line counted as an
    /// unreadable drop although the event is still in the segment being split. Every file the
    /// queue creates during the split is such a moment (the protection hook runs as it is made,
    /// before its bytes are written).
    @Test func aHalfIsWholeOrAbsentWheneverAKillCouldStopTheSplit() throws {
        let container = Container()
        defer { container.remove() }
        let snapshots = ClaimedSnapshots()
        let queue = try QueueTests.queue(container, segmentEvents: 4, observe: { _, _ in snapshots.take(container) })
        try queue.append((1...4).map { QueueTests.event($0) })
        let claimed = queue.claim(maxEvents: 4, now: QueueTests.now)
        let segment = try #require(claimed.claims.first)
        snapshots.arm(true)
        let halves = try #require(queue.split(segment, now: QueueTests.now))
        snapshots.arm(false)
        #expect(halves.map(\.events.count) == [2, 2])

        #expect(snapshots.all.count >= 2)
        for snapshot in snapshots.all {
            for (name, bytes) in snapshot where name != segment.url.lastPathComponent {
                let parsed = DiskQueue.parse(bytes)
                #expect(parsed.unreadable.isEmpty && parsed.events.count == 2,
                        "claimed/\(name) holds \(bytes.count) bytes (\(parsed.events.count) events) while the split writes it")
            }
        }
    }

    /// What a kill during the write leaves now: an unfinished half under its `.partial` name,
    /// beside the segment being split. It is never claimed nor counted, and goes once a lease old.
    @Test func anUnfinishedHalfIsNeitherClaimedNorCountedAndGoesAfterALease() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try QueueTests.queue(container, segmentEvents: 4, lease: 60)
        try queue.append((1...4).map { QueueTests.event($0) })
        let claimed = queue.claim(maxEvents: 4, now: QueueTests.now)
        try #require(claimed.claims.count == 1)
        let cut = Array((QueueTests.event(1).json + "\n" + QueueTests.event(2).json).utf8.dropLast(7))
        let stamp = Int64(QueueTests.now.timeIntervalSince1970 * 1000)
        let partial = "claimed/\(DiskQueue.stem(9))~1~\(stamp)\(DiskQueue.suffix)\(DiskQueue.partialSuffix)"
        try Data(cut).write(to: container.url.appendingPathComponent("EngageClient/" + partial))

        let later = QueueTests.now.addingTimeInterval(61)
        #expect(queue.reclaimExpired(now: later) == 1)
        let again = queue.claim(maxEvents: 10, now: later)
        #expect(again.claims.map(\.events.count) == [4])
        #expect(again.dropped.isEmpty)
        #expect(!container.files("claimed").contains { $0.hasSuffix(DiskQueue.partialSuffix) })
    }
}
