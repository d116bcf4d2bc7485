import Foundation

/// An exclusive lock on a file beside the data directory, held while a process creates or starts
/// the cluster (`flock`, released when the process ends however it ends). Where that file cannot
/// be made (a data directory mounted in a directory this user cannot write), starts go without
/// it, as before there was one: a data directory that starts alone still starts.
struct StartLock {
    private let descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            if [EACCES, EPERM, EROFS].contains(errno) { return }
            throw EmbeddedPostgresError("cannot open \(path) to take turns starting the local PostgreSQL: \(String(cString: strerror(errno)))")
        }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                throw EmbeddedPostgresError("cannot lock \(path) to take turns starting the local PostgreSQL: \(reason)")
            }
        }
    }

    func release() {
        if descriptor >= 0 { close(descriptor) }
    }
}
