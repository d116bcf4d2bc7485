import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import EngageClient

/// A fresh directory standing in for the app group container; removed by `remove()`.
struct Container {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("engage-client-\(UUID().uuidString)")

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    func path(_ relative: String) -> String {
        url.appendingPathComponent("EngageClient/\(relative)").path
    }

    func files(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path(folder))) ?? []).sorted()
    }

    func text(_ relative: String) -> String {
        (try? String(contentsOfFile: path(relative), encoding: .utf8)) ?? ""
    }
}

/// Collects what a test observes from several threads.
final class Recorder<Element: Sendable>: @unchecked Sendable {
    // Guards `items`.
    private let lock = NSLock()
    private var items: [Element] = []

    func add(_ item: Element) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    var all: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

@Suite("Disk queue")
struct QueueTests {
    static let now = Date(timeIntervalSince1970: 1_795_979_783)

    static func event(_ number: Int, at time: Date = now) -> DiskQueue.QueuedEvent {
        let id = String(format: "00000000-0000-4000-8000-%012d", number)
        return .init(id: id, json: #"{"event_id":"\#(id)","occurred_at":"\#(Timestamp.rfc3339(time))","n":\#(number)}"#)
    }

    static func queue(_ container: Container, maxBytes: Int = 1 << 20, segmentEvents: Int = 3, lease: TimeInterval = 60,
                      observe: (@Sendable (String, QueueFileProtection) -> Void)? = nil,
                      adjusting adjust: (inout DiskQueue.Options) -> Void = { _ in }) throws -> DiskQueue {
        var options = DiskQueue.Options(maxBytes: maxBytes)
        options.segmentEvents = segmentEvents
        options.lease = lease
        options.protection = FileProtector(protection: .completeUntilFirstUserAuthentication, observe: observe)
        adjust(&options)
        return try DiskQueue(container: container.url, options: options)
    }

    @Test func eventsGoToSegmentsAndAreClaimedOldestFirstAndReleasedInPlace() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container)
        for number in 1...7 { try queue.append([Self.event(number)]) }
        // Three events per segment: 1-3, 4-6, 7 (the head).
        #expect(container.files("ready") == ["00000000000000000001.ndjson", "00000000000000000002.ndjson", "00000000000000000003.ndjson"])

        let first = queue.claim(maxEvents: 4, now: Self.now)
        #expect(first.claims.flatMap(\.events) == (1...6).map { Self.event($0) })
        #expect(first.dropped.isEmpty)
        let pid = ProcessInfo.processInfo.processIdentifier
        #expect(container.files("claimed").count == 2)
        #expect(container.files("claimed").allSatisfy { $0.contains("~\(pid)~") })

        queue.release(first.claims)
        let again = queue.claim(maxEvents: 10, now: Self.now)
        #expect(again.claims.flatMap(\.events) == (1...7).map { Self.event($0) })
        // The head was claimed: the next event starts a new segment, never appends to a sent one.
        try queue.append([Self.event(8)])
        #expect(container.files("ready") == ["00000000000000000004.ndjson"])
        queue.complete(again.claims)
        #expect(container.files("claimed").isEmpty)
        #expect(queue.claim(maxEvents: 10, now: Self.now).claims.flatMap(\.events) == [Self.event(8)])
    }

    /// Two queues on one directory record and claim at once, as two processes would: every
    /// event is claimed exactly once and none is lost.
    @Test func twoWritersAndTwoSendersShareOneQueue() async throws {
        let container = Container()
        defer { container.remove() }
        _ = try Self.queue(container, maxBytes: 1 << 24)
        let claimed = Recorder<String>()
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<2 {
                group.addTask {
                    let queue = try! Self.queue(container, maxBytes: 1 << 24, segmentEvents: 5)
                    for number in 0..<150 { try! queue.append([Self.event(writer * 1000 + number)]) }
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    let queue = try! Self.queue(container, maxBytes: 1 << 24, segmentEvents: 5)
                    for _ in 0..<400 {
                        let batch = queue.claim(maxEvents: 7, now: Self.now).claims
                        for id in batch.flatMap(\.events).map(\.id) { claimed.add(id) }
                        queue.complete(batch)
                    }
                }
            }
        }
        let last = try Self.queue(container, maxBytes: 1 << 24)
        while true {
            let batch = last.claim(maxEvents: 50, now: Self.now).claims
            if batch.isEmpty { break }
            for id in batch.flatMap(\.events).map(\.id) { claimed.add(id) }
            last.complete(batch)
        }
        let expected = (0..<150).map { Self.event($0).id } + (0..<150).map { Self.event(1000 + $0).id }
        #expect(claimed.all.count == 300)
        #expect(Set(claimed.all) == Set(expected))
        #expect(last.status() == .init(readyFiles: 0, readyEvents: 0, claimedFiles: 0, bytes: 0))
    }

    @Test func overflowDropsTheOldestSegmentsReportsAndCountsThem() throws {
        let container = Container()
        defer { container.remove() }
        let size = Self.event(1).json.utf8.count + 1
        let queue = try Self.queue(container, maxBytes: size * 4, segmentEvents: 2)
        for number in 1...4 { #expect(try queue.append([Self.event(number)]).dropped.isEmpty) }
        #expect(try queue.append([Self.event(5)]).dropped.overflow == [Self.event(1).id, Self.event(2).id])
        #expect(queue.status() == .init(readyFiles: 2, readyEvents: 3, claimedFiles: 0, bytes: size * 3))
        #expect(queue.dropCounts.overflow == 2)
        #expect(queue.claim(maxEvents: 10, now: Self.now).claims.flatMap(\.events) == [3, 4, 5].map { Self.event($0) })
    }

    @Test func expiredClaimsComeBackAndSoDoClaimsFromTheFuture() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container, segmentEvents: 1, lease: 30)
        for number in 1...3 { try queue.append([Self.event(number)]) }
        let old = queue.claim(maxEvents: 1, now: Self.now.addingTimeInterval(-31))
        let fresh = queue.claim(maxEvents: 1, now: Self.now)
        // Stamped a day ahead: the clock has been set back a day since.
        let future = queue.claim(maxEvents: 1, now: Self.now.addingTimeInterval(86_400))
        #expect(old.claims.count == 1 && fresh.claims.count == 1 && future.claims.count == 1)
        #expect(queue.reclaimExpired(now: Self.now) == 2)
        #expect(container.files("claimed").count == 1)
        #expect(queue.claim(maxEvents: 5, now: Self.now).claims.flatMap(\.events) == [Self.event(1), Self.event(3)])
        // The first owner finishing late deletes nothing of the new owner's.
        queue.complete(old.claims)
        #expect(container.files("claimed").count == 3)
    }

    /// Unreadable lines are set aside in quarantine and reported once, not sent; the rest of
    /// their segment is sent.
    @Test func unreadableLinesAreQuarantined() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container)
        try queue.append([Self.event(1), .init(id: "?", json: "{not json"), Self.event(2)])
        let claim = queue.claim(maxEvents: 10, now: Self.now)
        #expect(claim.claims.flatMap(\.events) == [Self.event(1), Self.event(2)])
        #expect(claim.dropped.unreadable == ["{not json"])
        #expect(container.files("quarantine") == ["00000000000000000001-lines"])
        #expect(container.text("quarantine/00000000000000000001-lines") == "{not json\n")
        // Released, the segment comes back without the bad line: it is not reported twice.
        queue.release(claim.claims)
        let again = queue.claim(maxEvents: 10, now: Self.now)
        #expect(again.dropped.isEmpty)
        #expect(again.claims.flatMap(\.events) == [Self.event(1), Self.event(2)])
        #expect(queue.dropCounts.unreadable == 1)
    }

    /// A segment that cannot be read at all goes to quarantine once instead of cycling between
    /// claimed and ready forever.
    @Test func anUnreadableFileIsQuarantinedOnce() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container)
        try FileManager.default.createDirectory(atPath: container.path("ready/00000000000000000001.ndjson"), withIntermediateDirectories: true)
        try queue.append([Self.event(1)])
        let claim = queue.claim(maxEvents: 10, now: Self.now)
        #expect(claim.dropped.unreadable.count == 1)
        #expect(claim.dropped.unreadable.first?.hasPrefix("file 00000000000000000001.ndjson") == true)
        #expect(claim.claims.flatMap(\.events) == [Self.event(1)])
        #expect(container.files("quarantine") == ["00000000000000000001-file"])
        queue.complete(claim.claims)
        #expect(queue.reclaimExpired(now: Self.now.addingTimeInterval(3600)) == 0)
        #expect(queue.claim(maxEvents: 10, now: Self.now).claims.isEmpty)
        #expect(container.files("ready").isEmpty && container.files("claimed").isEmpty)
    }

    /// Age is the server's to judge: an event a year old by the claiming clock is claimed and
    /// sent like any other (the server rejects it if it is too old by its own clock).
    @Test func noEventIsDroppedForItsAge() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container)
        try queue.append([Self.event(1, at: Self.now.addingTimeInterval(-365 * 86_400)), Self.event(2),
                          .init(id: "x", json: #"{"event_id":"x","occurred_at":"not a time"}"#)])
        let claim = queue.claim(maxEvents: 10, now: Self.now.addingTimeInterval(31 * 86_400))
        #expect(claim.dropped.isEmpty)
        #expect(claim.claims.flatMap(\.events).map(\.id) == [Self.event(1).id, Self.event(2).id, "x"])
        #expect(queue.dropCounts == DropCounts())
    }

    /// A writer killed in the middle of a line leaves a fragment; the next event is still whole.
    @Test func aFragmentLeftByAKilledWriterDoesNotSpoilTheNextEvent() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container)
        try queue.append([Self.event(1)])
        let handle = try #require(FileHandle(forWritingAtPath: container.path("ready/00000000000000000001.ndjson")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"event_id":"00000000-0000-4000-8000-0000000"#.utf8))
        try handle.close()
        try queue.append([Self.event(2)])
        let claim = queue.claim(maxEvents: 10, now: Self.now)
        #expect(claim.claims.flatMap(\.events) == [Self.event(1), Self.event(2)])
        #expect(claim.dropped.unreadable == [#"{"event_id":"00000000-0000-4000-8000-0000000"#])
    }

    @Test func anEventRecordedOnceIsNotQueuedAgain() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container)
        #expect(try queue.append([Self.event(1)], onceID: Self.event(1).id).alreadyRecorded == false)
        #expect(try queue.append([Self.event(1)], onceID: Self.event(1).id).alreadyRecorded == true)
        #expect(try queue.append([Self.event(2)], onceID: Self.event(2).id).alreadyRecorded == false)
        #expect(queue.eventIDs() == [Self.event(1).id, Self.event(2).id])
    }

    /// The recent ids are a bounded window: old entries make room, so the file never grows
    /// with the number of events recorded.
    @Test func theWindowOfRecentIDsIsBounded() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container, adjusting: { $0.recentIDs = 4 })
        for number in 1...20 { try queue.append([Self.event(number)], onceID: Self.event(number).id) }
        let kept = container.text("recent-ids").split(separator: "\n")
        #expect(kept.count <= 8)
        #expect(kept.last.map(String.init) == Self.event(20).id)
        #expect(try queue.append([Self.event(20)], onceID: Self.event(20).id).alreadyRecorded)
    }

    /// Without its index (a lost or damaged lock file) the queue starts a new segment after every
    /// existing one, and loses nothing.
    @Test func aLostIndexIsRebuiltFromTheFiles() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container)
        for number in 1...4 { try queue.append([Self.event(number)]) }
        let claim = queue.claim(maxEvents: 1, now: Self.now)
        #expect(claim.claims.flatMap(\.events).count == 3)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: container.path("queue.lock")))
        try queue.append([Self.event(5)])
        #expect(container.files("ready") == ["00000000000000000002.ndjson", "00000000000000000003.ndjson"])
        #expect(container.text("queue.lock").hasPrefix("engage-queue 1 head=00000000000000000003 events=0000000001"))
        queue.release(claim.claims)
        #expect(queue.eventIDs() == (1...5).map { Self.event($0).id })
    }

    /// An index older than the files (its write failed, or a process was killed before writing
    /// it) can name a claimed segment as the head, so an append makes a new segment under the
    /// claimed one's number. Putting the claim back (its lease ran out) must not replace that
    /// segment: it takes a new number, and every event stays.
    @Test func aClaimPutBackNeverReplacesASegmentMadeUnderItsNumber() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container, segmentEvents: 3, lease: 60)
        try queue.append([Self.event(1)])
        try queue.append([Self.event(2)])
        let lock = URL(fileURLWithPath: container.path("queue.lock"))
        let indexBefore = try Data(contentsOf: lock)
        let dead = queue.claim(maxEvents: 10, now: Self.now)
        #expect(dead.claims.flatMap(\.events) == [Self.event(1), Self.event(2)])
        try indexBefore.write(to: lock)

        try queue.append([Self.event(3)])
        #expect(container.files("ready") == ["00000000000000000001.ndjson"])
        #expect(queue.reclaimExpired(now: Self.now.addingTimeInterval(61)) == 1)
        #expect(container.files("ready") == ["00000000000000000001.ndjson", "00000000000000000002.ndjson"])
        #expect(Set(queue.eventIDs()) == Set([1, 2, 3].map { Self.event($0).id }))
        // Appends go after the segment put back.
        try queue.append([Self.event(4)])
        #expect(container.files("ready").last == "00000000000000000003.ndjson")
        #expect(queue.claim(maxEvents: 10, now: Self.now).claims.flatMap(\.events).map(\.id).sorted()
                == [1, 2, 3, 4].map { Self.event($0).id }.sorted())
    }

    /// The same stale index, with the later segment claimed and released (a network error) after
    /// the dead claim came back under the shared number: the release takes a new number too.
    @Test func aReleaseNeverReplacesASegmentPutBackUnderItsNumber() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container, segmentEvents: 3, lease: 60)
        try queue.append([Self.event(1)])
        let lock = URL(fileURLWithPath: container.path("queue.lock"))
        let indexBefore = try Data(contentsOf: lock)
        _ = queue.claim(maxEvents: 10, now: Self.now)
        try indexBefore.write(to: lock)

        try queue.append([Self.event(2)])
        let later = queue.claim(maxEvents: 10, now: Self.now.addingTimeInterval(61))
        #expect(later.claims.flatMap(\.events) == [Self.event(2)])
        #expect(queue.reclaimExpired(now: Self.now.addingTimeInterval(61)) == 1)
        queue.release(later.claims)
        #expect(container.files("claimed").isEmpty)
        #expect(Set(queue.eventIDs()) == Set([1, 2].map { Self.event($0).id }))
        #expect(queue.eventIDs().count == 2)
    }

    /// A move back cut short between its link and its unlink (a killed process) leaves the claim
    /// under two names; the next reclaim finishes that move instead of taking the ready name for
    /// another segment and queueing the events a second time.
    @Test func aPutBackCutShortIsFinishedNotQueuedTwice() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container, segmentEvents: 3, lease: 60)
        try queue.append([Self.event(1)])
        try queue.append([Self.event(2)])
        let claim = queue.claim(maxEvents: 10, now: Self.now)
        #expect(claim.claims.count == 1)
        #expect(link(claim.claims[0].url.path, container.path("ready/00000000000000000001.ndjson")) == 0)

        #expect(queue.reclaimExpired(now: Self.now.addingTimeInterval(61)) == 1)
        #expect(container.files("ready") == ["00000000000000000001.ndjson"])
        #expect(container.files("claimed").isEmpty)
        #expect(queue.eventIDs() == [Self.event(1).id, Self.event(2).id])
        #expect(queue.claim(maxEvents: 10, now: Self.now).claims.flatMap(\.events) == [Self.event(1), Self.event(2)])
    }

    /// Running short of descriptors or memory for a moment (another thread of the app holds them)
    /// must not make a segment "broken": its events would be quarantined and dropped.
    @Test func aReadThatFailsForAMomentLeavesTheSegmentInLine() {
        for code in [EACCES, EPERM, EMFILE, ENFILE, ENOMEM, EAGAIN, EINTR, ENOBUFS] {
            guard case .unavailable(code) = QueueFiles.failedRead(code) else {
                Issue.record("errno \(code) is not a passing failure")
                continue
            }
        }
        if case .missing = QueueFiles.failedRead(ENOENT) {} else { Issue.record("ENOENT is not missing") }
        for code in [EIO, EISDIR, ELOOP, ENAMETOOLONG] {
            guard case .broken(code) = QueueFiles.failedRead(code) else {
                Issue.record("errno \(code) is not broken")
                continue
            }
        }
    }

    /// Every directory and file the queue creates gets the class that lets the extension write
    /// while the device is locked.
    @Test func everythingCreatedIsProtectedExplicitly() throws {
        let container = Container()
        defer { container.remove() }
        let seen = Recorder<String>()
        let queue = try Self.queue(container) { path, protection in
            #expect(protection == .completeUntilFirstUserAuthentication)
            seen.add(String(path.dropFirst(container.url.path.count + 1)))
        }
        try queue.append([Self.event(1)], onceID: Self.event(1).id)
        queue.setRetryState(.init(endpoint: "http://a", notBefore: Self.now, failures: 1))
        queue.count(DropCounts())
        let created = Set(seen.all.map { $0.hasPrefix("EngageClient/retry.json.tmp") ? "EngageClient/retry.json.tmp" : $0 }
            .map { $0.hasPrefix("EngageClient/dropped.json.tmp") ? "EngageClient/dropped.json.tmp" : $0 })
        #expect(created == ["EngageClient", "EngageClient/ready", "EngageClient/claimed", "EngageClient/quarantine",
                            "EngageClient/queue.lock", "EngageClient/ready/00000000000000000001.ndjson", "EngageClient/recent-ids",
                            "EngageClient/retry.json.tmp", "EngageClient/dropped.json.tmp"])
    }

    @Test func retryStateBelongsToOneEndpoint() throws {
        let container = Container()
        defer { container.remove() }
        let queue = try Self.queue(container)
        let until = Date(timeIntervalSince1970: 1_800_000_000.5)
        queue.setRetryState(.init(endpoint: "http://a", notBefore: until, failures: 3))
        #expect(queue.retryState(endpoint: "http://a") == .init(endpoint: "http://a", notBefore: until, failures: 3))
        #expect(queue.retryState(endpoint: "http://b") == nil)
        queue.setRetryState(nil)
        #expect(queue.retryState(endpoint: "http://a") == nil)
    }

    /// Many threads asking for the installation id at once get one id, created once.
    @Test func theInstallationIDIsCreatedOnceUnderARace() throws {
        let container = Container()
        defer { container.remove() }
        let ids = Recorder<String>()
        DispatchQueue.concurrentPerform(iterations: 32) { _ in
            if let id = try? InstallationID.readOrCreate(in: container.url) { ids.add(id) }
        }
        #expect(ids.all.count == 32)
        #expect(Set(ids.all).count == 1)
        #expect(UUID(uuidString: ids.all[0]) != nil)
        #expect(container.files("").filter { $0.hasPrefix("installation-id") } == ["installation-id"])
        #expect(try InstallationID.readOrCreate(in: container.url) == ids.all[0])
        // A damaged file is replaced, not trusted.
        try Data("\n".utf8).write(to: URL(fileURLWithPath: container.path("installation-id")))
        let replaced = try InstallationID.readOrCreate(in: container.url)
        #expect(replaced != ids.all[0] && UUID(uuidString: replaced) != nil)
    }

    /// Processes that find the file damaged at once agree on the one id that replaces it (each
    /// replaced it with its own before, and kept its own).
    @Test func aDamagedInstallationIDIsReplacedOnceUnderARace() throws {
        let container = Container()
        defer { container.remove() }
        _ = try InstallationID.readOrCreate(in: container.url)
        for _ in 0..<20 {
            try Data("\n".utf8).write(to: URL(fileURLWithPath: container.path("installation-id")))
            let ids = Recorder<String>()
            DispatchQueue.concurrentPerform(iterations: 16) { _ in
                if let id = try? InstallationID.readOrCreate(in: container.url) { ids.add(id) }
            }
            #expect(ids.all.count == 16)
            #expect(Set(ids.all).count == 1)
            #expect(try InstallationID.readOrCreate(in: container.url) == ids.all.first)
        }
    }
}
