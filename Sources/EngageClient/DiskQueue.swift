import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The durable queue: plain files in the app group container, shared by every process of the app
/// (the app, its Notification Service Extension, its Content Extension) without locks. Each step
/// is one atomic `rename(2)`, so a process killed at any point leaves each file either fully in
/// one state or fully in the next.
///
///     <container>/EngageClient/
///       tmp/        being written: <stem>.ndjson, fsynced, then renamed into ready/
///       ready/      waiting: <stem>.ndjson, one event per line; stems sort oldest first
///       claimed/    being sent: <stem>~<pid>~<claimed at, ms>.ndjson; whoever renamed a file
///                   here owns it until the lease runs out, then anyone may rename it back
///       retry.json  when the next request may be sent, shared so that every process backs off
///
/// A stem is `<nanoseconds since 1970, 20 digits>-<pid>-<random>`. Files are deleted only after
/// the server answered 200, so a retry sends the same event ids and the server's idempotency
/// turns any repeat into a duplicate.
struct DiskQueue: Sendable {
    static let suffix = ".ndjson"

    /// An event read back from the queue.
    struct QueuedEvent: Sendable, Equatable {
        var id: String
        var json: String
    }

    /// A file this process renamed into `claimed/`: it alone sends, completes or releases it.
    struct Claim: Sendable {
        var stem: String
        var url: URL
        var events: [QueuedEvent]
    }

    struct Status: Sendable, Equatable {
        var readyFiles: Int
        var readyEvents: Int
        var claimedFiles: Int
        var bytes: Int
    }

    let root: URL
    let tmp: URL
    let ready: URL
    let claimed: URL
    let maxBytes: Int
    let lease: TimeInterval
    private var pid: Int32 { ProcessInfo.processInfo.processIdentifier }

    init(container: URL, maxBytes: Int, lease: TimeInterval) throws {
        root = container.appendingPathComponent("EngageClient", isDirectory: true)
        tmp = root.appendingPathComponent("tmp", isDirectory: true)
        ready = root.appendingPathComponent("ready", isDirectory: true)
        claimed = root.appendingPathComponent("claimed", isDirectory: true)
        self.maxBytes = maxBytes
        self.lease = lease
        for directory in [tmp, ready, claimed] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
    }

    // MARK: Appending

    /// Writes the events as one new file in `ready/`, durably, before returning; then drops the
    /// oldest waiting files while the queue is over `maxBytes`, returning the ids it dropped.
    @discardableResult
    func append(_ events: [QueuedEvent]) throws -> [String] {
        let stem = Self.newStem(pid: pid)
        let name = stem + Self.suffix
        let temporary = tmp.appendingPathComponent(name)
        let text = events.map { $0.json + "\n" }.joined()
        try Self.writeDurably(Data(text.utf8), to: temporary)
        guard rename(temporary.path, ready.appendingPathComponent(name).path) == 0 else {
            let failure = QueueError(code: .renameFailed, errno: errno, path: temporary.path)
            try? FileManager.default.removeItem(at: temporary)
            throw failure
        }
        Self.synchronizeDirectory(ready)
        return trimToLimit()
    }

    /// Drops the oldest files of `ready/` until the queue (ready and claimed) fits `maxBytes`.
    func trimToLimit() -> [String] {
        let readyFiles = sizedListing(ready)
        var total = readyFiles.reduce(0) { $0 + $1.bytes } + sizedListing(claimed).reduce(0) { $0 + $1.bytes }
        var dropped: [String] = []
        for file in readyFiles where total > maxBytes {
            let url = ready.appendingPathComponent(file.name)
            // Read before deleting, to report the ids; a file another process just claimed is
            // no longer ours to drop.
            guard let data = try? Data(contentsOf: url), unlink(url.path) == 0 else { continue }
            total -= file.bytes
            dropped += Self.parse(data).events.map(\.id)
        }
        return dropped
    }

    // MARK: Claiming

    /// Claims the oldest waiting files, one rename each, until they hold `maxEvents` events.
    /// Lines that are not a JSON object with an `event_id` are returned in `unreadable`.
    func claim(maxEvents: Int, now: Date = Date()) -> (claims: [Claim], unreadable: [String]) {
        var claims: [Claim] = []
        var unreadable: [String] = []
        var count = 0
        let claimedAt = Int64(now.timeIntervalSince1970 * 1000)
        for name in listing(ready) where count < maxEvents {
            let stem = String(name.dropLast(Self.suffix.count))
            let target = claimed.appendingPathComponent("\(stem)~\(pid)~\(claimedAt)\(Self.suffix)")
            // Losing the race to another process is ENOENT: that file is theirs now.
            guard rename(ready.appendingPathComponent(name).path, target.path) == 0 else { continue }
            guard let data = try? Data(contentsOf: target) else { continue }
            let parsed = Self.parse(data)
            unreadable += parsed.unreadable
            if parsed.events.isEmpty {
                try? FileManager.default.removeItem(at: target)
                continue
            }
            claims.append(Claim(stem: stem, url: target, events: parsed.events))
            count += parsed.events.count
        }
        return (claims, unreadable)
    }

    /// Deletes claimed files after the server stored (or finally refused) their events.
    func complete(_ claims: [Claim]) {
        for claim in claims { unlink(claim.url.path) }
    }

    /// Puts claimed files back under their original name, so they keep their place in line.
    func release(_ claims: [Claim]) {
        for claim in claims {
            _ = rename(claim.url.path, ready.appendingPathComponent(claim.stem + Self.suffix).path)
        }
    }

    /// Renames back to `ready/` every claim older than the lease: its sender died or hung.
    /// Also removes partial writes in `tmp/` that are older than the lease. Returns how many
    /// claimed files came back.
    @discardableResult
    func reclaimExpired(now: Date = Date()) -> Int {
        let nowMS = Int64(now.timeIntervalSince1970 * 1000)
        var reclaimed = 0
        for name in listing(claimed) {
            let parts = name.dropLast(Self.suffix.count).split(separator: "~")
            guard parts.count == 3, let claimedAt = Int64(parts[2]) else { continue }
            guard Double(nowMS - claimedAt) / 1000 >= lease else { continue }
            let back = ready.appendingPathComponent(String(parts[0]) + Self.suffix)
            if rename(claimed.appendingPathComponent(name).path, back.path) == 0 { reclaimed += 1 }
        }
        for file in sizedListing(tmp) where now.timeIntervalSince(file.modified) >= max(lease, 60) {
            unlink(tmp.appendingPathComponent(file.name).path)
        }
        return reclaimed
    }

    func status() -> Status {
        let readyFiles = sizedListing(ready)
        let claimedFiles = sizedListing(claimed)
        var events = 0
        for file in readyFiles {
            if let data = try? Data(contentsOf: ready.appendingPathComponent(file.name)) {
                events += data.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
            }
        }
        let bytes = (readyFiles + claimedFiles).reduce(0) { $0 + $1.bytes }
        return Status(readyFiles: readyFiles.count, readyEvents: events, claimedFiles: claimedFiles.count, bytes: bytes)
    }

    // MARK: Shared retry state

    struct RetryState: Sendable, Equatable {
        var endpoint: String
        var notBefore: Date
        var failures: Int
    }

    private var retryURL: URL { root.appendingPathComponent("retry.json") }

    /// The backoff recorded by any process for this endpoint, if any.
    func retryState(endpoint: String) -> RetryState? {
        guard let data = try? Data(contentsOf: retryURL),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              object["endpoint"] as? String == endpoint,
              let notBefore = (object["not_before_ms"] as? NSNumber)?.int64Value,
              let failures = (object["failures"] as? NSNumber)?.intValue
        else { return nil }
        return RetryState(endpoint: endpoint, notBefore: Date(timeIntervalSince1970: Double(notBefore) / 1000),
                          failures: failures)
    }

    func setRetryState(_ state: RetryState?) {
        guard let state else {
            unlink(retryURL.path)
            return
        }
        let text = JSONWriter.object {
            $0.string("endpoint", state.endpoint)
            $0.integer("not_before_ms", Int(state.notBefore.timeIntervalSince1970 * 1000))
            $0.integer("failures", state.failures)
        }
        try? Data(text.utf8).write(to: retryURL, options: .atomic)
    }

    // MARK: Files

    static func newStem(pid: Int32, now: Date = Date()) -> String {
        let nanoseconds = String(UInt64(now.timeIntervalSince1970 * 1_000_000_000))
        let random = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return String(repeating: "0", count: max(0, 20 - nanoseconds.count)) + nanoseconds + "-\(pid)-"
            + String(repeating: "0", count: 8 - random.count) + random
    }

    /// Splits a queue file into events; a line that is not a JSON object with a string
    /// `event_id` is unreadable (a file is written whole and renamed, so this means corruption).
    static func parse(_ data: Data) -> (events: [QueuedEvent], unreadable: [String]) {
        var events: [QueuedEvent] = []
        var unreadable: [String] = []
        for line in data.split(separator: 0x0A) where !line.isEmpty {
            if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
               let id = object["event_id"] as? String {
                events.append(QueuedEvent(id: id, json: String(decoding: line, as: UTF8.self)))
            } else {
                unreadable.append(String(decoding: line.prefix(200), as: UTF8.self))
            }
        }
        return (events, unreadable)
    }

    /// Writes, flushes to stable storage and closes a new file.
    static func writeDurably(_ data: Data, to url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw QueueError(code: .writeFailed, errno: errno, path: url.path)
        }
        do {
            let handle = try FileHandle(forWritingTo: url)
            defer { try? handle.close() }
            try handle.write(contentsOf: data)
            try handle.synchronize()
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw QueueError(code: .writeFailed, errno: errno, path: url.path)
        }
    }

    /// Makes a rename into `directory` durable too (best effort: not every platform allows it).
    static func synchronizeDirectory(_ directory: URL) {
        let descriptor = open(directory.path, O_RDONLY)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    /// Names of queue files in a directory, oldest first.
    private func listing(_ directory: URL) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(Self.suffix) }.sorted()
    }

    private func sizedListing(_ directory: URL) -> [(name: String, bytes: Int, modified: Date)] {
        listing(directory).compactMap { name in
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
            else { return nil }
            let bytes = (attributes[.size] as? NSNumber)?.intValue ?? 0
            let modified = attributes[.modificationDate] as? Date ?? Date()
            return (name, bytes, modified)
        }
    }
}

/// A failure to write to the queue directory; `record...` throws it, and the event is not queued.
public struct QueueError: Error, Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Code: String, Sendable {
        case writeFailed = "write-failed"
        case renameFailed = "rename-failed"
    }

    public var code: Code
    public var errno: Int32
    public var path: String

    public var description: String { "engage queue: \(code.rawValue)" }
    public var debugDescription: String { "engage queue: \(code.rawValue) errno=\(errno) path=\(path)" }
}
