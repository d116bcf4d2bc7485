import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The durable queue: segment files in the app group container, shared by every process of the
/// app (the app, its Notification Service Extension, its Content Extension).
///
///     <container>/EngageClient/
///       queue.lock   flock(2)ed around every change; holds the index (QueueIndex)
///       ready/       segments waiting to be sent: <number, 20 digits>.ndjson, one event per
///                    line, oldest first; the highest is the head, where appends go
///       claimed/     being sent: <number>~<pid>~<claimed at, ms>.ndjson; whoever renamed a
///                    segment here owns it until the lease runs out, then anyone may move it back,
///                    under the lock (never over a segment of the same number made since: it takes
///                    a new one)
///       quarantine/  lines and files that could not be read, kept for diagnosis (the newest 16)
///       recent-ids   the last ids recorded once (`append(_:onceID:)`)
///       dropped.json what every process dropped, by reason
///       retry.json   when the next request may be sent, shared so that every process backs off
///
/// Recording appends one line to the head segment and fsyncs it, under the lock: its cost does
/// not depend on how many events wait (the index says where the head is and how big the queue
/// is). A head that reached `segmentEvents` events or `segmentBytes` bytes is left as it is and
/// the next number becomes the head. Sending claims whole segments by renaming them, so a
/// segment is sent by one process at a time; files are deleted only after the server answered,
/// so a retry sends the same event ids and the server's idempotency turns repeats into duplicates.
struct DiskQueue: Sendable {
    static let suffix = ".ndjson"
    /// A split's half being written (`split`); one a killed process left is removed by
    /// `reclaimExpired` once a lease old.
    static let partialSuffix = ".partial"

    /// An event read back from the queue.
    struct QueuedEvent: Sendable, Equatable {
        var id: String
        var json: String
    }

    /// A segment this process renamed into `claimed/`: it alone sends, completes or releases it.
    struct Claim: Sendable {
        var stem: String
        var url: URL
        var events: [QueuedEvent]
        var bytes: Int
    }

    /// Events the queue gave up on, by reason, in queue order. Never by age: the server judges
    /// that by its own clock (the device's may be set a month ahead) and rejects what is too old.
    struct Drops: Sendable, Equatable {
        var overflow: [String] = []
        var diskFull: [String] = []
        /// The text (at most 200 bytes) of each unreadable line, or `file <name>: errno N`.
        var unreadable: [String] = []

        var isEmpty: Bool { overflow.isEmpty && diskFull.isEmpty && unreadable.isEmpty }

        var counts: DropCounts {
            var counts = DropCounts()
            counts.overflow = overflow.count
            counts.diskFull = diskFull.count
            counts.unreadable = unreadable.count
            return counts
        }
    }

    struct AppendResult: Sendable, Equatable {
        var dropped = Drops()
        /// `onceID` was recorded before: nothing was written.
        var alreadyRecorded = false
    }

    /// An append that failed after it had dropped events to make room (a full disk that dropping
    /// every waiting event did not clear, or a write that failed otherwise after the overflow's
    /// drops): the events are gone, so they are reported all the same.
    struct AppendFailed: Error {
        var cause: any Error
        var dropped: Drops
    }

    struct ClaimResult: Sendable {
        var claims: [Claim] = []
        var dropped = Drops()
        /// A segment could not be opened for now (the device is locked, or the process is out of
        /// descriptors or memory for a moment); it stays in line.
        var storageUnavailable = false
    }

    struct Status: Sendable, Equatable {
        var readyFiles: Int
        var readyEvents: Int
        var claimedFiles: Int
        var bytes: Int
    }

    struct Options: Sendable {
        var maxBytes: Int
        /// Events per segment: the batch size, so that one claim is one request.
        var segmentEvents: Int = 50
        var segmentBytes: Int = 64 * 1024
        var lease: TimeInterval = 60
        var protection = FileProtector(protection: .completeUntilFirstUserAuthentication)
        var recentIDs = 256
        var quarantineFiles = 16
        /// Runs between `complete`'s two steps, where a process killed there would stop (tests
        /// read what it would leave on disk).
        var completeMidpoint: (@Sendable () -> Void)? = nil
        /// `EngageClient.Configuration.queueName`: nil, the container's one queue.
        var name: String? = nil
    }

    /// Whether `name` may name a queue: one path component of a few safe characters.
    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return (1...100).contains(bytes.count) && bytes[0] != UInt8(ascii: ".")
            && bytes.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    let root: URL
    let ready: URL
    let claimed: URL
    let quarantine: URL
    let options: Options
    var lockPath: String { root.appendingPathComponent(Self.lockName).path }
    /// The lock every process takes to change the queue's files (and `InstallationID` to mend its own).
    static let lockName = "queue.lock"
    private var pid: Int32 { ProcessInfo.processInfo.processIdentifier }

    init(container: URL, options: Options) throws {
        let shared = container.appendingPathComponent("EngageClient", isDirectory: true)
        let named = shared.appendingPathComponent("queues", isDirectory: true)
        if let name = options.name {
            guard Self.isValidName(name) else { throw QueueError(code: .invalidName, errno: 0, path: name) }
            root = named.appendingPathComponent(name, isDirectory: true)
        } else {
            root = shared
        }
        ready = root.appendingPathComponent("ready", isDirectory: true)
        claimed = root.appendingPathComponent("claimed", isDirectory: true)
        quarantine = root.appendingPathComponent("quarantine", isDirectory: true)
        self.options = options
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        for directory in (options.name == nil ? [] : [shared, named]) + [root, ready, claimed, quarantine] {
            try QueueFiles.createDirectory(directory.path, protection: options.protection)
        }
    }

    init(container: URL, maxBytes: Int, lease: TimeInterval) throws {
        try self.init(container: container, options: Options(maxBytes: maxBytes, lease: lease))
    }

    // MARK: Appending

    /// Appends the events to the head segment, durably, before returning. Makes room first when
    /// the queue would pass `maxBytes` (dropping the oldest waiting segments), and when the disk
    /// is full (dropping the oldest until the write fits). With `onceID`, does nothing if that
    /// id is among the last ones recorded with an `onceID`. Throws `AppendFailed` when it dropped
    /// events and still could not write, `QueueError` when it failed without dropping any.
    @discardableResult
    func append(_ events: [QueuedEvent], onceID: String? = nil) throws -> AppendResult {
        let text = Array(events.map { $0.json + "\n" }.joined().utf8)
        // Room for it would be every waiting event, and it would still pass the limit; or no
        // segment could hold it and still be read back (`QueueFiles.largestReadBytes`).
        guard text.count <= min(options.maxBytes, QueueFiles.largestReadBytes) else {
            throw QueueError(code: .tooLarge, errno: 0, path: root.path)
        }
        return try QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { lock in
            var index = QueueIndex.read(from: lock) ?? rebuiltIndex()
            var result = AppendResult()
            if let onceID, recentIDs().contains(Substring(onceID)) {
                result.alreadyRecorded = true
                return result
            }
            if index.bytes + text.count > options.maxBytes {
                let freed = dropOldest(&index) { $0.bytes + text.count <= options.maxBytes }
                result.dropped.overflow = freed.ids
                result.dropped.unreadable += freed.unreadable
            }
            // A segment past the read limit would be set aside as unreadable whole, with the
            // events already in it (a `maxBytes` above that limit lets one event take it there).
            let headBytes = QueueFiles.size(atPath: segmentPath(index.head))
            if index.headEvents >= options.segmentEvents || headBytes >= options.segmentBytes
                || headBytes + text.count > QueueFiles.largestReadBytes {
                index.head += 1
                index.headEvents = 0
            }
            defer { index.write(to: lock) }
            while true {
                do {
                    try QueueFiles.appendDurably(text, to: segmentPath(index.head), protection: options.protection)
                    break
                } catch let error as QueueError where error.code == .diskFull {
                    let freed = dropOldest(&index, maxFiles: 1) { _ in false }
                    guard freed.files > 0 else { throw failure(error, after: result.dropped) }
                    result.dropped.diskFull += freed.ids
                    result.dropped.unreadable += freed.unreadable
                } catch {
                    // Any other failure (a read-only or damaged file system, too many open files)
                    // after the overflow made room: the dropped events are reported all the same.
                    throw failure(error, after: result.dropped)
                }
            }
            index.headEvents += events.count
            index.bytes += text.count
            if let onceID { remember(onceID) }
            // The count of what was dropped must survive too: on a full disk, make room for it
            // (never at the cost of the event just written, which is in the head). Any other
            // failure is no reason to drop more: the drops are still reported to the caller,
            // only their count is not kept.
            var counted = result.dropped.isEmpty
            while !counted {
                do {
                    try addToDropCounts(result.dropped.counts)
                    counted = true
                } catch let error as QueueError where error.code == .diskFull {
                    let freed = dropOldest(&index, maxFiles: 1, keeping: index.head) { _ in false }
                    if freed.files == 0 { break }
                    result.dropped.diskFull += freed.ids
                    result.dropped.unreadable += freed.unreadable
                } catch {
                    break
                }
            }
            // After the count's own drops too: each of them may be recorded again.
            forgetRecent(result.dropped)
            return result
        }
    }

    /// What an append that failed throws: `AppendFailed`, with the drops counted, when it dropped
    /// events to make room first; else the failure itself.
    private func failure(_ error: any Error, after dropped: Drops) -> any Error {
        if dropped.isEmpty { return error }
        forgetRecent(dropped)
        try? addToDropCounts(dropped.counts)
        return AppendFailed(cause: error, dropped: dropped)
    }

    /// Deletes the oldest waiting segments, one at a time, until `enough` says so, `maxFiles`
    /// are gone or none is left; returns the ids of their events, and the text of their lines
    /// that are not events (set aside in quarantine, as a claim does), and how many files went.
    /// Empty files go too but count for nothing, in `maxFiles` or the result: dropping one frees
    /// no room (a write the disk refused leaves its segment empty, and counted, dropping it
    /// would let the caller write again and fail again for ever). Claimed segments are being
    /// sent and stay.
    private func dropOldest(_ index: inout QueueIndex, maxFiles: Int = .max, keeping kept: Int64? = nil,
                            until enough: (QueueIndex) -> Bool) -> (ids: [String], unreadable: [String], files: Int) {
        var dropped: [String] = []
        var unreadable: [String] = []
        var files = 0
        for name in QueueFiles.names(in: ready.path, suffix: Self.suffix) where Self.number(of: name) != kept {
            if files >= maxFiles || enough(index) { break }
            let path = ready.appendingPathComponent(name).path
            let bytes = QueueFiles.size(atPath: path)
            // What is dropped is reported: a segment that cannot be read now (a locked device, a
            // process short of descriptors) stays in line, as a claim leaves it; one that can
            // never be read goes, reported as a claim reports it.
            var parsed: (events: [QueuedEvent], unreadable: [String]) = ([], [])
            var broken: Int32?
            switch QueueFiles.readFile(path) {
            case .missing, .unavailable: continue
            case let .broken(code): broken = code
            case let .content(data): parsed = Self.parse(data)
            }
            guard unlink(path) == 0 else { continue }
            dropped += parsed.events.map(\.id)
            if let broken { unreadable.append("file \(name): errno \(broken)") }
            if !parsed.unreadable.isEmpty {
                quarantineLines(parsed.unreadable, as: String(name.dropLast(Self.suffix.count)))
                unreadable += parsed.unreadable.map(Self.excerpt)
            }
            if bytes > 0 { files += 1 }
            index.bytes = max(0, index.bytes - bytes)
            if Self.number(of: name) == index.head { index.headEvents = 0 }
        }
        return (dropped, unreadable, files)
    }

    // MARK: Claiming

    /// Claims the oldest waiting segments, one rename each, until they hold `maxEvents` events
    /// (at least one segment). Drops, instead of claiming, lines that are not events; a segment
    /// that cannot be read at all goes to `quarantine/`. An event's age is for the server to
    /// judge: `now` (the device's clock, which the user may set a month ahead) only stamps the
    /// claim.
    func claim(maxEvents: Int, now: Date = Date()) -> ClaimResult {
        var result = ClaimResult()
        let claimedAt = Int64(now.timeIntervalSince1970 * 1000)
        _ = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { lock in
            var index = QueueIndex.read(from: lock) ?? rebuiltIndex()
            var count = 0
            for name in QueueFiles.names(in: ready.path, suffix: Self.suffix) where count < maxEvents {
                let stem = String(name.dropLast(Self.suffix.count))
                let source = ready.appendingPathComponent(name).path
                let target = claimed.appendingPathComponent("\(stem)~\(pid)~\(claimedAt)\(Self.suffix)")
                if Self.number(of: name) == index.head {
                    // The index moves past the head before the head is renamed: a process killed
                    // between the two only skips a number. The other way round, the next append
                    // would make a new segment under the claimed one's number.
                    var moved = index
                    moved.head += 1
                    moved.headEvents = 0
                    guard moved.write(to: lock) else { continue }
                    index = moved
                }
                // Another process may have claimed it since the listing: ENOENT, theirs now.
                guard rename(source, target.path) == 0 else { continue }
                switch QueueFiles.readFile(target.path) {
                case .missing:
                    continue
                case .unavailable:
                    putBack(target.path, stem: stem, index: &index)
                    result.storageUnavailable = true
                case let .broken(code):
                    quarantineFile(at: target.path, as: stem)
                    result.dropped.unreadable.append("file \(name): errno \(code)")
                case let .content(data):
                    let parsed = Self.parse(data)
                    let events = parsed.events
                    var bytes = data.count
                    if !parsed.unreadable.isEmpty, !events.isEmpty {
                        // A release must not bring back what is dropped here. When the segment
                        // cannot be rewritten without those lines (a full disk), nothing is
                        // dropped yet: it goes back in line whole, to be dropped once, later.
                        let kept = Array(events.map { $0.json + "\n" }.joined().utf8)
                        guard (try? QueueFiles.replace(target.path, with: kept, protection: options.protection)) != nil else {
                            putBack(target.path, stem: stem, index: &index)
                            result.storageUnavailable = true
                            break
                        }
                        bytes = kept.count
                    }
                    if !parsed.unreadable.isEmpty {
                        quarantineLines(parsed.unreadable, as: stem)
                        result.dropped.unreadable += parsed.unreadable.map(Self.excerpt)
                    }
                    if events.isEmpty {
                        unlink(target.path)
                        continue
                    }
                    result.claims.append(Claim(stem: stem, url: target, events: events, bytes: bytes))
                    count += events.count
                }
                if result.storageUnavailable { break }
            }
            index.bytes = totalBytes()
            index.write(to: lock)
            if !result.dropped.isEmpty { try? addToDropCounts(result.dropped.counts) }
        }
        return result
    }

    /// Splits a claimed segment of two or more events into two claimed segments, its first and
    /// second half, under new numbers after the head (as a segment put back where its number
    /// is taken): for a server whose body limit is below one segment. The halves are on disk
    /// before the segment is removed, so a process killed in between leaves its events twice
    /// (the server's idempotency stores them once), never nowhere. Nil when the halves cannot be
    /// written (the segment stays as it was) or the claim is gone (its lease ran out and another
    /// process took it back).
    func split(_ claim: Claim, now: Date) -> [Claim]? {
        guard claim.events.count > 1 else { return nil }
        let claimedAt = Int64(now.timeIntervalSince1970 * 1000)
        let middle = claim.events.count / 2
        let parts = [Array(claim.events[..<middle]), Array(claim.events[middle...])]
        let halves = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { lock -> [Claim]? in
            var index = QueueIndex.read(from: lock) ?? rebuiltIndex()
            let first = index.head + 1
            // Past the head before the files exist, as in `claim`: appends never reach these numbers.
            index.head = first + Int64(parts.count)
            index.headEvents = 0
            guard index.write(to: lock) else { return nil }
            var halves: [Claim] = []
            for (offset, events) in parts.enumerated() {
                let stem = Self.stem(first + Int64(offset))
                let url = claimed.appendingPathComponent("\(stem)~\(pid)~\(claimedAt)\(Self.suffix)")
                let text = Array(events.map { $0.json + "\n" }.joined().utf8)
                // Written apart and renamed once whole and synced: a half is complete or absent
                // under its claimable name, never cut short by a kill (its cut line would be
                // counted as an unreadable drop, the event still being in the segment).
                let partial = url.path + Self.partialSuffix
                unlink(partial)
                do {
                    try QueueFiles.appendDurably(text, to: partial, protection: options.protection)
                } catch {
                    unlink(partial)
                    for half in halves { unlink(half.url.path) }
                    return nil
                }
                guard rename(partial, url.path) == 0 else {
                    unlink(partial)
                    for half in halves { unlink(half.url.path) }
                    return nil
                }
                halves.append(Claim(stem: stem, url: url, events: events, bytes: text.count))
            }
            // The halves' names durable before the segment's goes.
            QueueFiles.synchronizeDirectory(claimed.path)
            guard unlink(claim.url.path) == 0 else {
                for half in halves { unlink(half.url.path) }
                return nil
            }
            QueueFiles.synchronizeDirectory(claimed.path)
            return halves
        }
        return halves ?? nil
    }

    /// Deletes claimed segments after the server stored (or finally refused) their events,
    /// under the lock, counting them off the index first: a process killed in between leaves the
    /// count too low until the next claim recounts (the queue may pass `maxBytes` by a segment),
    /// never too high (appends would drop waiting events to make room that is already free).
    func complete(_ claims: [Claim]) {
        let locked: Void? = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { lock in
            // Under the lock no other process moves a claimed file: one still there is deleted next.
            let present = claims.filter { access($0.url.path, F_OK) == 0 }
            guard !present.isEmpty else { return }
            if var index = QueueIndex.read(from: lock) {
                index.bytes = max(0, index.bytes - present.reduce(0) { $0 + $1.bytes })
                index.write(to: lock)
            }
            options.completeMidpoint?()
            for claim in present { unlink(claim.url.path) }
        }
        // Without the lock the files go all the same: sent again, they would be counted again.
        if locked == nil { for claim in claims { unlink(claim.url.path) } }
    }

    /// Puts claimed segments back in line, under their own number where it is free.
    func release(_ claims: [Claim]) {
        for claim in claims { putBack(claim.url.path, stem: claim.stem) }
    }

    /// Moves a claimed segment back to `ready/`, under the queue's lock: under its own number, so
    /// that it keeps its place in line, or, when a segment of that number exists (made after this
    /// one was claimed, from an index that did not know), under a new number after the head:
    /// never over another segment, whose events would be lost. False when the claim is gone
    /// (another process put it back) or cannot be moved.
    @discardableResult
    private func putBack(_ path: String, stem: String) -> Bool {
        let moved = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { lock -> Bool in
            var index = QueueIndex.read(from: lock) ?? rebuiltIndex()
            let before = index
            let moved = putBack(path, stem: stem, index: &index)
            if index != before { index.write(to: lock) }
            return moved
        }
        return moved ?? false
    }

    /// `putBack` with the lock held and the index read.
    @discardableResult
    private func putBack(_ path: String, stem: String, index: inout QueueIndex) -> Bool {
        switch QueueFiles.moveWithoutReplacing(path, to: ready.appendingPathComponent(stem + Self.suffix).path) {
        case .moved: return true
        case .sourceMissing, .failed: return false
        case .targetExists: break
        }
        while true {
            index.head += 1
            index.headEvents = 0
            switch QueueFiles.moveWithoutReplacing(path, to: segmentPath(index.head)) {
            case .moved:
                // Appends go to the number after it, as after any full segment.
                index.head += 1
                return true
            case .targetExists: continue
            case .sourceMissing, .failed: return false
            }
        }
    }

    /// Renames back to `ready/` every claim older than the lease (its sender died or hung), and
    /// every claim stamped more than a lease in the future: the clock was set back since, and
    /// waiting for the clock to catch up could take days. Returns how many came back.
    @discardableResult
    func reclaimExpired(now: Date = Date()) -> Int {
        let nowMS = Int64(now.timeIntervalSince1970 * 1000)
        var reclaimed = 0
        for name in QueueFiles.names(in: claimed.path, suffix: Self.suffix) {
            let parts = name.dropLast(Self.suffix.count).split(separator: "~")
            guard parts.count == 3, let claimedAt = Int64(parts[2]) else { continue }
            // In Double: a damaged stamp near Int64's ends must not overflow the subtraction.
            let age = (Double(nowMS) - Double(claimedAt)) / 1000
            guard age >= options.lease || age < -options.lease else { continue }
            // Its sender may have sent it before it died: the resend's duplicates are delivered.
            let path = claimed.appendingPathComponent(name).path
            var ids: [String] = []
            if case let .content(data) = QueueFiles.readFile(path) { ids = Self.parse(data).events.map(\.id) }
            if putBack(path, stem: String(parts[0])) {
                reclaimed += 1
                markUnanswered(ids)
            }
        }
        // A split's half a killed process left unfinished: its events are still in the segment
        // it split. A lease old, so that no split still writes it (a split takes milliseconds).
        for name in QueueFiles.names(in: claimed.path, suffix: Self.suffix + Self.partialSuffix) {
            let parts = name.dropLast(Self.suffix.count + Self.partialSuffix.count).split(separator: "~")
            guard parts.count == 3, let claimedAt = Int64(parts[2]) else { continue }
            let age = (Double(nowMS) - Double(claimedAt)) / 1000
            guard age >= options.lease || age < -options.lease else { continue }
            unlink(claimed.appendingPathComponent(name).path)
        }
        return reclaimed
    }

    // MARK: Looking

    func status() -> Status {
        let readyNames = QueueFiles.names(in: ready.path, suffix: Self.suffix)
        var events = 0
        for name in readyNames {
            if case let .content(data) = QueueFiles.readFile(ready.appendingPathComponent(name).path) {
                events += Self.parse(data).events.count
            }
        }
        return Status(readyFiles: readyNames.count, readyEvents: events,
                      claimedFiles: QueueFiles.names(in: claimed.path, suffix: Self.suffix).count, bytes: totalBytes())
    }

    /// The ids of every event waiting or claimed, oldest first.
    func eventIDs() -> [String] {
        let paths = QueueFiles.names(in: ready.path, suffix: Self.suffix).map { ready.appendingPathComponent($0).path }
            + QueueFiles.names(in: claimed.path, suffix: Self.suffix).map { claimed.appendingPathComponent($0).path }
        return paths.flatMap { path -> [String] in
            guard case let .content(data) = QueueFiles.readFile(path) else { return [] }
            return Self.parse(data).events.map(\.id)
        }
    }

    var dropCounts: DropCounts {
        guard case let .content(data) = QueueFiles.readFile(dropCountsPath),
              let object = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any]
        else { return DropCounts() }
        var counts = DropCounts()
        for key in DropCounts.keys { counts[key] = FoundationNumber.whole(object[key], atMost: .max) ?? 0 }
        return counts
    }

    /// Adds to the counts every process shares.
    func count(_ drops: DropCounts) {
        _ = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { _ in try addToDropCounts(drops) }
    }

    private var dropCountsPath: String { root.appendingPathComponent("dropped.json").path }

    /// Called with the lock held.
    private func addToDropCounts(_ drops: DropCounts) throws {
        let sum = dropCounts + drops
        let text = JSONWriter.object { object in
            for key in DropCounts.keys { object.integer(key, sum[key]) }
        }
        try QueueFiles.replace(dropCountsPath, with: Array(text.utf8), protection: options.protection)
    }

    // MARK: Shared retry state

    struct RetryState: Sendable, Equatable {
        var endpoint: String
        var notBefore: Date
        var failures: Int
    }

    /// Consecutive failures a retry state holds at most.
    static let mostFailuresCounted = 1_000_000

    private var retryPath: String { root.appendingPathComponent("retry.json").path }

    /// The backoff recorded by any process for this endpoint, if any.
    func retryState(endpoint: String) -> RetryState? {
        guard case let .content(data) = QueueFiles.readFile(retryPath),
              let object = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any],
              object["endpoint"] as? String == endpoint,
              let notBefore = FoundationNumber.whole(object["not_before_ms"], clampedTo: Int.min...Int.max),
              // The count only sets the backoff's exponent (capped at 30): held to a range a client
              // reaches, so a damaged file cannot make the next `failures + 1` overflow. A boolean
              // or a fraction is no count: the state is unreadable, and the next failure starts over.
              let failures = FoundationNumber.whole(object["failures"], clampedTo: 0...Self.mostFailuresCounted)
        else { return nil }
        return RetryState(endpoint: endpoint, notBefore: Date(timeIntervalSince1970: Double(notBefore) / 1000), failures: failures)
    }

    /// Records (or, with nil, clears) the backoff, under the queue's lock: every process and
    /// every flush of one process writes it in turn (`QueueFiles.replace`'s temporary file is
    /// one per process), so a reader finds one whole state, never two writes mixed.
    func setRetryState(_ state: RetryState?) {
        _ = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { _ in writeRetryState(state) }
    }

    /// Counts one more failure for `endpoint` and sets the next attempt `delay(failures)` after
    /// `now`, reading and writing under the lock: two senders failing together count two. A wait
    /// another sender set that ends later (its Retry-After) is kept, unless it lies further ahead
    /// than `longestWait` (the wall clock was set back since it was written).
    func recordFailure(endpoint: String, now: Date, longestWait: TimeInterval = .infinity, delay: (_ failures: Int) -> TimeInterval) {
        _ = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { _ in
            let existing = retryState(endpoint: endpoint)
            let failures = (existing?.failures ?? 0) + 1
            var notBefore = now + delay(failures)
            if let kept = existing?.notBefore, kept > notBefore, kept.timeIntervalSince(now) <= longestWait { notBefore = kept }
            writeRetryState(RetryState(endpoint: endpoint, notBefore: notBefore, failures: failures))
        }
    }

    /// Clears the backoff once a request sent at `sentAt` was answered, unless another sender set
    /// a wait since that ends after it: that sender's Retry-After still holds for everyone.
    func clearRetryState(answeringRequestSentAt sentAt: Date, endpoint: String) {
        _ = try? QueueFiles.withExclusiveLock(lockPath, protection: options.protection) { _ in
            if let state = retryState(endpoint: endpoint), state.notBefore > sentAt { return }
            writeRetryState(nil)
        }
    }

    /// Called with the lock held.
    private func writeRetryState(_ state: RetryState?) {
        guard let state else {
            unlink(retryPath)
            return
        }
        let text = JSONWriter.object {
            $0.string("endpoint", state.endpoint)
            // Rounded up: a server's Retry-After is a "not before", never to be met early.
            $0.integer("not_before_ms", Int((state.notBefore.timeIntervalSince1970 * 1000).rounded(.up)))
            $0.integer("failures", state.failures)
        }
        try? QueueFiles.replace(retryPath, with: Array(text.utf8), protection: options.protection)
    }

    // MARK: Files

    private func segmentPath(_ number: Int64) -> String {
        ready.appendingPathComponent(Self.stem(number) + Self.suffix).path
    }

    static func stem(_ number: Int64) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    /// The segment number of a `ready/` or `claimed/` file name.
    static func number(of name: String) -> Int64? {
        Int64(name.prefix { $0 != "~" && $0 != "." })
    }

    /// The index as the files tell it: a new head after every existing segment.
    private func rebuiltIndex() -> QueueIndex {
        let names = QueueFiles.names(in: ready.path, suffix: Self.suffix) + QueueFiles.names(in: claimed.path, suffix: Self.suffix)
        // A number beyond any queue (a damaged name) cannot be the head's: `highest + 1` must not overflow.
        let highest = names.compactMap(Self.number(of:)).filter { $0 < QueueIndex.largest }.max() ?? 0
        return QueueIndex(head: highest + 1, headEvents: 0, bytes: totalBytes())
    }

    private func totalBytes() -> Int {
        [ready, claimed].reduce(0) { sum, directory in
            sum + QueueFiles.names(in: directory.path, suffix: Self.suffix).reduce(0) {
                $0 + QueueFiles.size(atPath: directory.appendingPathComponent($1).path)
            }
        }
    }

    private var recentPath: String { root.appendingPathComponent("recent-ids").path }

    private func recentIDs() -> [Substring] {
        guard case let .content(data) = QueueFiles.readFile(recentPath) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n")
    }

    private func remember(_ id: String) {
        let known = recentIDs()
        if known.count >= 2 * options.recentIDs {
            let kept = known.suffix(options.recentIDs - 1).map { $0 + "\n" }.joined() + id + "\n"
            try? QueueFiles.replace(recentPath, with: Array(kept.utf8), protection: options.protection)
        } else {
            try? QueueFiles.appendDurably(Array((id + "\n").utf8), to: recentPath, protection: options.protection)
        }
    }

    /// Takes the ids of events dropped before they were sent off the recent ids: their events
    /// never reached the server, so a sweep that finds the notification still in Notification
    /// Center records its display again instead of taking it as recorded.
    private func forgetRecent(_ dropped: Drops) {
        let ids = Set(dropped.overflow + dropped.diskFull)
        guard !ids.isEmpty else { return }
        let known = recentIDs()
        let kept = known.filter { !ids.contains(String($0)) }
        guard kept.count < known.count else { return }
        try? QueueFiles.replace(recentPath, with: Array(kept.map { $0 + "\n" }.joined().utf8), protection: options.protection)
    }

    private func quarantineFile(at path: String, as stem: String) {
        if rename(path, quarantine.appendingPathComponent("\(stem)-file").path) != 0 {
            _ = try? FileManager.default.removeItem(atPath: path)
        }
        trimQuarantine()
    }

    private func quarantineLines(_ lines: [String], as stem: String) {
        let text = lines.map { $0 + "\n" }.joined()
        try? QueueFiles.appendDurably(Array(text.utf8), to: quarantine.appendingPathComponent("\(stem)-lines").path,
                                      protection: options.protection)
        trimQuarantine()
    }

    private func trimQuarantine() {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: quarantine.path)) ?? []).sorted()
        for name in names.dropLast(options.quarantineFiles) {
            try? FileManager.default.removeItem(atPath: quarantine.appendingPathComponent(name).path)
        }
    }

    /// What is reported of an unreadable line: at most its first 200 bytes.
    static func excerpt(_ line: String) -> String {
        String(decoding: Array(line.utf8.prefix(200)), as: UTF8.self)
    }

    /// Splits a segment into events; a line that is not a JSON object with a string `event_id`
    /// is unreadable (a fragment left by a process killed mid-write, or storage corruption).
    static func parse(_ data: [UInt8]) -> (events: [QueuedEvent], unreadable: [String]) {
        var events: [QueuedEvent] = []
        var unreadable: [String] = []
        for line in data.split(separator: 0x0A) where !line.isEmpty {
            if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
               let id = object["event_id"] as? String {
                events.append(QueuedEvent(id: id, json: String(decoding: line, as: UTF8.self)))
            } else {
                unreadable.append(String(decoding: line, as: UTF8.self))
            }
        }
        return (events, unreadable)
    }
}

/// A failure to write to the queue directory; `record...` throws it, and the event is not queued.
public struct QueueError: Error, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: String, Sendable {
        case writeFailed = "write-failed"
        case renameFailed = "rename-failed"
        case lockFailed = "lock-failed"
        /// The disk is full and dropping every waiting event did not make room.
        case diskFull = "disk-full"
        /// The event alone is larger than the queue's limit (`maxQueueBytes`, and at most 64 MiB, what
        /// a segment may hold and still be read): nothing was dropped for it.
        case tooLarge = "too-large"
        /// `queueName` is not a name a queue may have (see `EngageClient.Configuration.queueName`).
        case invalidName = "invalid-name"
    }

    public var code: Code
    public var errno: Int32
    public var path: String

    public var description: String { "engage queue: \(code.rawValue)" }
    public var debugDescription: String { "engage queue: \(code.rawValue) errno=\(errno) path=\(path)" }
}
