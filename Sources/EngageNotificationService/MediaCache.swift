import EngageClient
import Foundation

/// The media the extension attached, kept for the next push that offers the same file. The
/// server's model and the strategy replay assume an extension keeps what it attached, for a day
/// (`PipelineLimits.cacheTTLSeconds`): a variant found here is read instead of downloaded, under
/// every strategy, and `cached` prefers what is here. Without it `cached` ran as `thumbnail`,
/// while the replay credited it with reading the cached original.
///
/// One file per URL under `<container>/EngageClient/media-cache/`, named by a name-based UUID of
/// the URL with its type's extension; its modification time is when it was kept. The directory
/// has the queue's data protection class (a push mostly arrives while the device is locked) and
/// is left out of backups. Every step is best effort: a cache that cannot be read or written only
/// means a download.
public struct MediaCache: Sendable {
    public let directory: URL
    /// How long a kept file is read: the model's `cacheTTLSeconds`.
    public var timeToLive: TimeInterval
    /// Above this many bytes the files kept longest ago are removed.
    public var maxBytes: Int
    private let protector: FileProtector

    public init(container: URL, protection: QueueFileProtection = .completeUntilFirstUserAuthentication,
                timeToLive: TimeInterval = 86_400, maxBytes: Int = 100_000_000) {
        directory = container.appendingPathComponent("EngageClient/media-cache", isDirectory: true)
        protector = FileProtector(protection: protection)
        self.timeToLive = timeToLive
        self.maxBytes = maxBytes
    }

    /// A kept file: what to copy, its type, its size and when it was kept.
    public struct Entry: Sendable, Equatable {
        public var file: URL
        public var type: MediaType
        public var bytes: Int
        public var keptAt: Date
    }

    /// The file kept for `url`, if kept within the time to live before `now` (one kept "after"
    /// `now`, by a clock since set back, counts as just kept, as the model counts it).
    public func entry(for url: URL, now: Date) -> Entry? {
        entries(for: [url], now: now)[url]
    }

    /// `entry(for:now:)` of each URL, from one reading of the directory.
    public func entries(for urls: [URL], now: Date) -> [URL: Entry] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var found: [URL: Entry] = [:]
        for url in urls where found[url] == nil {
            let stem = Self.stem(of: url)
            let newest = names.filter { $0.hasPrefix(stem + ".") }.compactMap { Self.entry(named: $0, in: directory) }
                .filter { now.timeIntervalSince($0.keptAt) <= timeToLive }
                .max { $0.keptAt < $1.keptAt }
            if let newest { found[url] = newest }
        }
        return found
    }

    /// A copy of `file` under a temporary name in the cache's directory, to keep once it is
    /// known to be attached (`keep(staged:…)`) or to discard; nil when it cannot be made.
    public func stage(_ file: URL) -> URL? {
        let manager = FileManager.default
        if !manager.fileExists(atPath: directory.path) {
            try? manager.createDirectory(at: directory, withIntermediateDirectories: true)
            protector.apply(to: directory.path)
            BackupExclusion.exclude(directory.path)
        }
        let staged = directory.appendingPathComponent(".\(UUID().uuidString).partial")
        guard (try? manager.copyItem(at: file, to: staged)) != nil else {
            try? manager.removeItem(at: staged)
            return nil
        }
        protector.apply(to: staged.path)
        return staged
    }

    /// Keeps a staged copy as `url`'s, kept `now`, moved into place whole, so a reader never
    /// finds part of one. Then removes what has expired and, beyond `maxBytes`, what was kept
    /// longest ago.
    public func keep(staged: URL, type: MediaType, for url: URL, now: Date) {
        let manager = FileManager.default
        try? manager.setAttributes([.modificationDate: now], ofItemAtPath: staged.path)
        let stem = Self.stem(of: url)
        let target = stem + "." + type.fileExtension
        try? manager.removeItem(at: directory.appendingPathComponent(target))
        if (try? manager.moveItem(at: staged, to: directory.appendingPathComponent(target))) == nil { discard(staged) }
        trim(now: now, replacing: (stem: stem, by: target))
    }

    /// Removes a staged copy that is not to be kept.
    public func discard(_ staged: URL) {
        try? FileManager.default.removeItem(at: staged)
    }

    /// Removes expired files, then the oldest until the rest fit in `maxBytes`, partial copies a
    /// killed process left behind, and the copies of a URL just kept under another type.
    func trim(now: Date, replacing kept: (stem: String, by: String)? = nil) {
        let manager = FileManager.default
        var entries: [Entry] = []
        for name in (try? manager.contentsOfDirectory(atPath: directory.path)) ?? [] {
            let path = directory.appendingPathComponent(name)
            if let kept, name.hasPrefix(kept.stem + "."), name != kept.by {
                try? manager.removeItem(at: path)
                continue
            }
            if name.hasSuffix(".partial") {
                let modified = (try? manager.attributesOfItem(atPath: path.path)[.modificationDate] as? Date) ?? nil
                if let modified, now.timeIntervalSince(modified) > 3_600 { try? manager.removeItem(at: path) }
                continue
            }
            guard let entry = Self.entry(named: name, in: directory) else { continue }
            let age = now.timeIntervalSince(entry.keptAt)
            if age > timeToLive { try? manager.removeItem(at: path) } else { entries.append(entry) }
        }
        var total = entries.reduce(0) { $0 + $1.bytes }
        for entry in entries.sorted(by: { $0.keptAt < $1.keptAt }) where total > maxBytes {
            try? manager.removeItem(at: entry.file)
            total -= entry.bytes
        }
    }

    private static func entry(named name: String, in directory: URL) -> Entry? {
        let parts = name.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let type = MediaType.supported.first(where: { $0.fileExtension == parts[1] }) else { return nil }
        let file = directory.appendingPathComponent(name)
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: file.path),
              let keptAt = attributes[.modificationDate] as? Date, let size = attributes[.size] as? NSNumber
        else { return nil }
        return Entry(file: file, type: type, bytes: size.intValue, keptAt: keptAt)
    }

    /// The file name's stem for `url`: a name-based UUID of it, the same in every process.
    static func stem(of url: URL) -> String {
        UUID.nameBased(url.absoluteString, namespace: namespace).uuidString.lowercased()
    }

    /// Fixed forever: changing it would orphan every kept file until the time to live ends.
    private static let namespace = UUID(uuidString: "0b6f4c1e-3a5d-4e8f-9c2b-7d1a6e5f4c3b")!
}
