import Foundation

/// One prune or restore at a time per archive directory (`flock` on a file in it, released when
/// the process ends however it ends). The retention lock is the database's: prunes of two
/// databases into one directory (shards sharing a backup volume) each saved a manifest loaded
/// before the other's days, or wrote over a day file the other had just written, and the events
/// of one were gone from the log and from the archive. Taken without waiting, as that lock is.
/// The file is opened for writing (NFS emulates `flock` with `fcntl` locks, whose exclusive kind
/// needs it), else for reading (another user's lock file, which locally still locks); a directory
/// where it can be neither made nor read (mounted read-only for a restore, before any prune made
/// one) goes without: nothing can prune into it either.
final class ArchiveLock: Sendable {
    static let fileName = ".engage-archive.lock"
    private let descriptor: Int32

    init(directory: String) throws(LogRetentionError) {
        let path = directory + "/" + Self.fileName
        var opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if opened < 0, errno == EACCES { opened = open(path, O_RDONLY | O_CLOEXEC) }
        guard opened >= 0 else {
            guard [EACCES, EPERM, EROFS].contains(errno) else {
                throw .io(path: path, problem: "cannot open: \(String(cString: strerror(errno)))")
            }
            descriptor = -1
            return
        }
        while flock(opened, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EINTR else {
                let busy = errno == EWOULDBLOCK
                let reason = String(cString: strerror(errno))
                // Closed here, before `descriptor` is set: no deinit runs for this object.
                close(opened)
                if busy { throw .archiveBusy(directory: directory) }
                throw .io(path: path, problem: "cannot lock: \(reason)")
            }
        }
        descriptor = opened
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }
}
