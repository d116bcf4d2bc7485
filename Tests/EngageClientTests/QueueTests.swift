import Foundation
import Testing
@testable import EngageClient

/// A fresh directory standing in for the app group container; removed by `remove()`.
struct Container {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("engage-client-\(UUID().uuidString)")

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    func files(_ folder: String) -> [String] {
        let path = url.appendingPathComponent("EngageClient/\(folder)").path
        return ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }
}

@Suite("Disk queue")
struct QueueTests {
    static func event(_ number: Int) -> DiskQueue.QueuedEvent {
        let id = String(format: "00000000-0000-4000-8000-%012d", number)
        return .init(id: id, json: #"{"event_id":"\#(id)","n":\#(number)}"#)
    }

    @Test func appendedEventsAreClaimedOldestFirstAndReleasedInPlace() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 60)
        for number in 1...5 { try queue.append([Self.event(number)]) }
        #expect(container.files("ready").count == 5)
        #expect(container.files("tmp").isEmpty)

        let first = queue.claim(maxEvents: 3)
        #expect(first.claims.flatMap(\.events) == [Self.event(1), Self.event(2), Self.event(3)])
        #expect(first.unreadable.isEmpty)
        #expect(container.files("claimed").count == 3)
        let pid = ProcessInfo.processInfo.processIdentifier
        #expect(container.files("claimed").allSatisfy { $0.contains("~\(pid)~") })

        queue.release(first.claims)
        let again = queue.claim(maxEvents: 10)
        #expect(again.claims.flatMap(\.events) == (1...5).map(Self.event))
        queue.complete(again.claims)
        #expect(container.files("ready").isEmpty && container.files("claimed").isEmpty)
    }

    @Test func twoProcessesNeverClaimTheSameFile() async throws {
        let container = Container()
        defer { container.remove() }
        let writer = try DiskQueue(container: container.url, maxBytes: 1 << 24, lease: 60)
        for number in 1...200 { try writer.append([Self.event(number)]) }
        // Two queues on one directory claim concurrently, as two processes would.
        let claimed = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<2 {
                group.addTask {
                    let queue = try! DiskQueue(container: container.url, maxBytes: 1 << 24, lease: 60)
                    var ids: [String] = []
                    while true {
                        let batch = queue.claim(maxEvents: 7).claims
                        if batch.isEmpty { return ids }
                        ids += batch.flatMap(\.events).map(\.id)
                        queue.complete(batch)
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(claimed.count == 200)
        #expect(Set(claimed) == Set((1...200).map { Self.event($0).id }))
    }

    @Test func overflowDropsTheOldestAndReportsThem() throws {
        let container = Container()
        defer { container.remove() }
        let size = Self.event(1).json.utf8.count + 1
        let queue = try DiskQueue(container: container.url, maxBytes: size * 3, lease: 60)
        for number in 1...3 { #expect(try queue.append([Self.event(number)]).isEmpty) }
        #expect(try queue.append([Self.event(4)]) == [Self.event(1).id])
        #expect(try queue.append([Self.event(5)]) == [Self.event(2).id])
        #expect(queue.status() == .init(readyFiles: 3, readyEvents: 3, claimedFiles: 0, bytes: size * 3))
        #expect(queue.claim(maxEvents: 10).claims.flatMap(\.events) == [3, 4, 5].map(Self.event))
    }

    @Test func expiredClaimsComeBackAndFreshOnesStay() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 30)
        try queue.append([Self.event(1)])
        try queue.append([Self.event(2)])
        let start = Date()
        let old = queue.claim(maxEvents: 1, now: start.addingTimeInterval(-31))
        let fresh = queue.claim(maxEvents: 1, now: start)
        #expect(old.claims.count == 1 && fresh.claims.count == 1)
        #expect(queue.reclaimExpired(now: start) == 1)
        #expect(container.files("claimed").count == 1)
        #expect(queue.claim(maxEvents: 5).claims.flatMap(\.events) == [Self.event(1)])
        // The first owner finishing late deletes nothing of the new owner's.
        queue.complete(old.claims)
        #expect(container.files("claimed").count == 2)
    }

    @Test func unreadableLinesAreSetAsideNotSent() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 60)
        try queue.append([Self.event(1), .init(id: "?", json: "{not json"), Self.event(2)])
        let claim = queue.claim(maxEvents: 10)
        #expect(claim.claims.flatMap(\.events) == [Self.event(1), Self.event(2)])
        #expect(claim.unreadable == ["{not json"])
    }

    @Test func retryStateBelongsToOneEndpoint() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try DiskQueue(container: container.url, maxBytes: 1 << 20, lease: 60)
        let until = Date(timeIntervalSince1970: 1_800_000_000.5)
        queue.setRetryState(.init(endpoint: "http://a", notBefore: until, failures: 3))
        #expect(queue.retryState(endpoint: "http://a") == .init(endpoint: "http://a", notBefore: until, failures: 3))
        #expect(queue.retryState(endpoint: "http://b") == nil)
        queue.setRetryState(nil)
        #expect(queue.retryState(endpoint: "http://a") == nil)
    }
}
