import Foundation

/// An exclusive lock on a file beside the data directory, held while a process creates or starts
/// the cluster (`flock`, released when the process ends however it ends).
struct StartLock {
    private let descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
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
        close(descriptor)
    }
}
