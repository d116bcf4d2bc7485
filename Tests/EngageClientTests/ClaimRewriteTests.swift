import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import EngageClient

@Suite("Disk queue: a claim whose rewrite fails")
struct ClaimRewriteTests {
    /// A claim drops an unreadable line by rewriting its segment without it. When that rewrite
    /// fails (here a directory stands where its temporary file goes; on a device, a full disk),
    /// the line must not be reported now and again after a release brings it back: every
    /// dropped line is reported, and counted, once.
    @Test func aFailedRewriteDoesNotReportTheSameLineTwice() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try QueueTests.queue(container)
        try queue.append([QueueTests.event(1), .init(id: "?", json: "{not json"), QueueTests.event(2)])
        let now = QueueTests.now
        let claimed = "00000000000000000001~\(getpid())~\(Int64(now.timeIntervalSince1970 * 1000)).ndjson"
        let obstacle = container.path("claimed/\(claimed).tmp-\(getpid())")
        try FileManager.default.createDirectory(atPath: obstacle, withIntermediateDirectories: true)

        var reported: [String] = []
        var sent: [String] = []
        let first = queue.claim(maxEvents: 10, now: now)
        reported += first.dropped.unreadable
        sent += first.claims.flatMap(\.events).map(\.id)
        queue.release(first.claims)
        try FileManager.default.removeItem(atPath: obstacle)

        let second = queue.claim(maxEvents: 10, now: now.addingTimeInterval(1))
        reported += second.dropped.unreadable
        sent += second.claims.flatMap(\.events).map(\.id)
        #expect(reported == ["{not json"])
        #expect(queue.dropCounts.unreadable == 1)
        #expect(second.claims.flatMap(\.events).map(\.id) == [QueueTests.event(1).id, QueueTests.event(2).id])
        queue.release(second.claims)
        #expect(queue.claim(maxEvents: 10, now: now.addingTimeInterval(2)).dropped.isEmpty)
    }
}
