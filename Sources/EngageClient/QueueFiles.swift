import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX file operations the queue needs, each checked, with errno kept for the error.
/// Plain descriptors rather than FileHandle: the queue must know exactly which call failed
/// (ENOSPC on a write is a full disk, EACCES on an open a locked device).
enum QueueFiles {
    /// Holds an exclusive `flock(2)` on `path` (creating the file) while `body` runs. Every
    /// process of the app takes it around each change of the queue, for microseconds to a few
    /// milliseconds (one fsync); it is released when the descriptor closes, also when the process
    /// dies.
    static func withExclusiveLock<T>(_ path: String, protection: FileProtector,
                                     _ body: (Int32) throws -> T) throws -> T {
        let created = !FileManager.default.fileExists(atPath: path)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw QueueError(code: errno == ENOSPC ? .diskFull : .lockFailed, errno: errno, path: path) }
        defer { close(descriptor) }
        if created { protection.apply(to: path) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw QueueError(code: .lockFailed, errno: errno, path: path) }
        }
        return try body(descriptor)
    }

    /// Appends `bytes` to the file at `path` (created with `protection` if new) and flushes them
    /// to stable storage before returning. On any failure the file is cut back to its previous
    /// length, so a failed append leaves no partial line. A previous append cut short by a killed
    /// process (no final line break) is closed with a line break first, so the fragment stays a
    /// line of its own and the new event is intact.
    static func appendDurably(_ bytes: [UInt8], to path: String, protection: FileProtector) throws {
        // Read-write: the last byte is read back (pread) to find a cut-short line.
        var descriptor = open(path, O_RDWR | O_APPEND | O_CLOEXEC)
        var created = false
        if descriptor < 0, errno == ENOENT {
            descriptor = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            created = descriptor >= 0
        }
        guard descriptor >= 0 else { throw QueueError(code: errno == ENOSPC ? .diskFull : .writeFailed, errno: errno, path: path) }
        defer { close(descriptor) }
        if created { protection.apply(to: path) }
        let start = size(of: descriptor)
        var data = bytes
        if start > 0, lastByte(of: descriptor, size: start) != 0x0A { data.insert(0x0A, at: 0) }
        var written = 0
        while written < data.count {
            let result = data[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else {
                let failure = errno
                _ = ftruncate(descriptor, off_t(start))
                throw QueueError(code: failure == ENOSPC || failure == EDQUOT ? .diskFull : .writeFailed, errno: failure, path: path)
            }
            written += result
        }
        guard fsync(descriptor) == 0 else {
            let failure = errno
            _ = ftruncate(descriptor, off_t(start))
            throw QueueError(code: failure == ENOSPC ? .diskFull : .writeFailed, errno: failure, path: path)
        }
        if created { synchronizeDirectory((path as NSString).deletingLastPathComponent) }
    }

    enum MoveOutcome: Equatable {
        case moved
        case targetExists
        case sourceMissing
        case failed(Int32)
    }

    /// Renames `source` to `target` unless `target` exists: `rename` would replace a file made
    /// under that name since, and every line in it. On Apple's systems an exclusive rename
    /// (`renamex_np`, `RENAME_EXCL`); elsewhere, or where the file system has none, a hard link
    /// and then the source's name removed, and where there are no hard links either, a rename
    /// after checking that `target` is free. A process killed between the link and the unlink
    /// leaves the file under both names: the next move of it finds the same file at the target
    /// and finishes the move instead of taking it for another file.
    static func moveWithoutReplacing(_ source: String, to target: String) -> MoveOutcome {
        #if canImport(Darwin)
        if renamex_np(source, target, UInt32(RENAME_EXCL)) == 0 { return .moved }
        switch errno {
        case EEXIST: return isSameFile(source, target) ? finishMove(source) : .targetExists
        case ENOENT: return .sourceMissing
        case ENOTSUP, EINVAL: break
        default: return .failed(errno)
        }
        #endif
        if link(source, target) == 0 { return finishMove(source) }
        let failure = errno
        switch failure {
        case EEXIST:
            return isSameFile(source, target) ? finishMove(source) : .targetExists
        case ENOENT:
            return .sourceMissing
        case EPERM, ENOTSUP, EOPNOTSUPP, EMLINK:
            if access(target, F_OK) == 0 { return .targetExists }
            if rename(source, target) == 0 { return .moved }
            return errno == ENOENT ? .sourceMissing : .failed(errno)
        default:
            return .failed(failure)
        }
    }

    private static func finishMove(_ source: String) -> MoveOutcome {
        unlink(source)
        return .moved
    }

    private static func isSameFile(_ first: String, _ second: String) -> Bool {
        var one = stat(), other = stat()
        return stat(first, &one) == 0 && stat(second, &other) == 0 && one.st_dev == other.st_dev && one.st_ino == other.st_ino
    }

    /// Replaces the file's content atomically (a temporary file renamed over it), flushed. The
    /// temporary file's name is one per process (a killed writer's leftover is reused, not
    /// piled up), so callers hold the queue's lock: two writers of one process would otherwise
    /// write into the same temporary file and publish the mix. (`InstallationID` repairs a
    /// damaged file without it, and reads back what it wrote.)
    static func replace(_ path: String, with bytes: [UInt8], protection: FileProtector) throws {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        try appendDurably(bytes, to: temporary, protection: protection)
        guard rename(temporary, path) == 0 else {
            let failure = errno
            unlink(temporary)
            throw QueueError(code: .renameFailed, errno: failure, path: path)
        }
    }

    enum ReadResult {
        case content([UInt8])
        case missing
        /// Not readable now but perhaps later: the device is locked (data protection).
        case unavailable(Int32)
        /// Never readable: not a regular file, or an I/O error.
        case broken(Int32)
    }

    /// The largest file `readFile` reads: a thousand times a segment (64 KB and one event).
    static let largestReadBytes = 64 << 20

    static func readFile(_ path: String) -> ReadResult {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return failedRead(errno) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return .broken(errno) }
        guard (status.st_mode & S_IFMT) == S_IFREG else { return .broken(EISDIR) }
        // No file the queue writes comes near the limit: a larger one (damaged, or sparse) is
        // never read, so that its size cannot size an allocation or fill the memory.
        guard status.st_size <= largestReadBytes else { return .broken(EFBIG) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { return failedRead(errno) }
            if count == 0 { return .content(bytes) }
            bytes += chunk[..<count]
            // Grown since fstat: the same limit.
            if bytes.count > largestReadBytes { return .broken(EFBIG) }
        }
    }

    /// What a failed `open` or `read` says about the file. Only a file that can never be read is
    /// broken (its events are set aside and dropped); a locked device, or a process short of
    /// descriptors or memory for a moment, leaves it in line for a later try.
    static func failedRead(_ code: Int32) -> ReadResult {
        switch code {
        case ENOENT: return .missing
        case EACCES, EPERM, EMFILE, ENFILE, ENOMEM, EAGAIN, EINTR, ENOBUFS: return .unavailable(code)
        default: return .broken(code)
        }
    }

    /// The size of a file, 0 when it does not exist.
    static func size(atPath path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// Names in a directory ending in `suffix`, sorted (queue names sort oldest first).
    static func names(in directory: String, suffix: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(suffix) }.sorted()
    }

    static func createDirectory(_ path: String, protection: FileProtector) throws {
        if mkdir(path, 0o700) == 0 {
            protection.apply(to: path)
            synchronizeDirectory((path as NSString).deletingLastPathComponent)
        } else if errno != EEXIST {
            throw QueueError(code: errno == ENOSPC ? .diskFull : .writeFailed, errno: errno, path: path)
        }
    }

    /// Makes a rename or creation in `directory` durable too (best effort: not every platform allows it).
    static func synchronizeDirectory(_ directory: String) {
        let descriptor = open(directory, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    private static func size(of descriptor: Int32) -> Int {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
    }

    private static func lastByte(of descriptor: Int32, size: Int) -> UInt8? {
        var byte: UInt8 = 0
        return pread(descriptor, &byte, 1, off_t(size - 1)) == 1 ? byte : nil
    }
}
