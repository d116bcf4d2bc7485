import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The pseudonymous id of one installation of the app, shared by the app and its extensions
/// through `<container>/EngageClient/installation-id`. Never a device token or a user identity;
/// it is gone with the app.
public enum InstallationID {
    /// Reads the id, creating it on first use. Creation is atomic: a new id is written to a file
    /// of this process's own, flushed, and hard-linked to the shared name, which fails when the
    /// name exists. Two processes starting together (the app and an extension woken by a push)
    /// therefore agree on one id: the loser of the race reads the winner's.
    public static func readOrCreate(in container: URL,
                                    protection: QueueFileProtection = .completeUntilFirstUserAuthentication) throws -> String {
        let directory = container.appendingPathComponent("EngageClient", isDirectory: true)
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        let protector = FileProtector(protection: protection)
        try QueueFiles.createDirectory(directory.path, protection: protector)
        let path = directory.appendingPathComponent("installation-id").path
        for _ in 0..<3 {
            switch QueueFiles.readFile(path) {
            case let .content(bytes):
                if let id = valid(bytes) {
                    // Files made by earlier versions too (setting it again costs next to nothing).
                    BackupExclusion.exclude(path)
                    return id
                }
                // Damaged (it never is written in place): replace it, atomically, and read again.
                // Under the queue's lock, and only if still damaged: two processes finding it so
                // at once would otherwise each write an id of their own and each keep its own.
                let lock = directory.appendingPathComponent(DiskQueue.lockName).path
                try QueueFiles.withExclusiveLock(lock, protection: protector) { _ in
                    if case let .content(now) = QueueFiles.readFile(path), valid(now) != nil { return }
                    try QueueFiles.replace(path, with: Array((newID() + "\n").utf8), protection: protector)
                    BackupExclusion.exclude(path)
                }
                continue
            case let .unavailable(code), let .broken(code):
                throw QueueError(code: .writeFailed, errno: code, path: path)
            case .missing:
                let own = path + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
                try QueueFiles.appendDurably(Array((newID() + "\n").utf8), to: own, protection: protector)
                let linked = link(own, path) == 0
                let failure = errno
                unlink(own)
                if linked {
                    QueueFiles.synchronizeDirectory(directory.path)
                    BackupExclusion.exclude(path)
                } else if failure != EEXIST {
                    throw QueueError(code: .writeFailed, errno: failure, path: path)
                }
            }
        }
        throw QueueError(code: .writeFailed, errno: 0, path: path)
    }

    private static func newID() -> String { UUID().uuidString.lowercased() }

    /// An id the server takes as a `device_id`: any other would have every event of the
    /// installation refused, so a damaged one is replaced.
    private static func valid(_ bytes: [UInt8]) -> String? {
        let id = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return WireText.isAcceptable(id, maxBytes: 200) ? id : nil
    }
}
