import Foundation

/// One prune or restore at a time per archive directory (`flock` on a file in it, released when
/// the process ends however it ends). The retention lock is the database's: prunes of two
/// databases into one directory (shards sharing a backup volume) each saved a manifest loaded
/// before the other's days, or wrote over a day file the other had just written, and the events
/// of one were gone from the log and from the archive. Taken without waiting, as that lock is. A
/// directory where the file cannot be made (mounted read-only for a restore) goes without it:
/// nothing can prune into it either.
final class ArchiveLock: Sendable {
    static let fileName = ".engage-archive.lock"
    private let descriptor: Int32

    init(directory: String) throws(LogRetentionError) {
        let path = directory + "/" + Self.fileName
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            if [EACCES, EPERM, EROFS].contains(errno) { return }
            throw .io(path: path, problem: "cannot open: \(String(cString: strerror(errno)))")
        }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EINTR else {
                let busy = errno == EWOULDBLOCK
                let reason = String(cString: strerror(errno))
                close(descriptor)
                if busy { throw .archiveBusy(directory: directory) }
                throw .io(path: path, problem: "cannot lock: \(reason)")
            }
        }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }
}
