import Foundation
import Testing
@testable import EngageClient

/// The byte count a process leaves in the index when it dies, read without the lock (a dead
/// process holds none) next to the bytes really on disk.
private final class IndexReadings: @unchecked Sendable {
    // Guards `readings`; written by the queue's hook.
    private let lock = NSLock()
    private var readings: [(index: Int, files: Int)] = []

    func read(_ container: Container) {
        let text = Array(container.text("queue.lock").utf8)
        let files = ["ready", "claimed"].flatMap { folder in
            container.files(folder).map { (try? FileManager.default.attributesOfItem(atPath: container.path("\(folder)/\($0)"))[.size] as? Int) ?? 0 }
        }.reduce(0, +)
        lock.withLock { readings.append((QueueIndex(text: text)?.bytes ?? -1, files)) }
    }

    var all: [(index: Int, files: Int)] { lock.withLock { readings } }
}

@Suite("Disk queue: completing a claim")
struct CompleteTests {
    /// A process killed in the middle of `complete` must not leave the index counting bytes that
    /// are gone: appends trust that count against `maxBytes`, and a count too high drops waiting
    /// events as overflow. Too low, or no index (rebuilt from the files), is harmless.
    @Test func aKillInsideCompleteNeverLeavesTheByteCountHigh() throws {
        let container = Container()
        defer { container.remove() }
        let readings = IndexReadings()
        let queue = try QueueTests.queue(container, adjusting: { $0.completeMidpoint = { readings.read(container) } })
        try queue.append([QueueTests.event(1), QueueTests.event(2), QueueTests.event(3)])
        try queue.append([QueueTests.event(4)])
        let claimed = queue.claim(maxEvents: 3, now: QueueTests.now)
        #expect(claimed.claims.count == 1)
        queue.complete(claimed.claims)
        #expect(readings.all.count == 1)
        for reading in readings.all {
            #expect(reading.index <= reading.files, "the index counts \(reading.index) bytes; \(reading.files) are on disk")
        }
    }
}
