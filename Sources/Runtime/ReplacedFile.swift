import Foundation
import Glibc

/// Writes a command's answer to a file so that a reader sees the old content or the new one,
/// never a part: a report written by cron into a directory a web server serves is read at any
/// moment. A regular file (or a missing one) is replaced by renaming a synced copy over it, with
/// the old file's owner, group and permissions; through a link, the file it points to is the one
/// replaced. Where that cannot be (what is not a regular file, a FIFO or `/dev/stdout`; a
/// directory this user may not create files in; a file whose owner or group this user cannot
/// give a copy) it is written in place, as any program writes a file.
public enum ReplacedFile {
    public struct WriteError: Error, CustomStringConvertible {
        public let description: String
    }

    public static func write(_ bytes: [UInt8], to path: String) throws(WriteError) {
        var status = stat()
        if stat(path, &status) == 0 {
            // realpath, not the kernel, resolves the name: `/dev/stdout` is a FIFO or terminal
            // whose link names no path, and is written in place like any other non-regular file.
            guard (status.st_mode & S_IFMT) == S_IFREG, let resolved = realpath(path, nil) else {
                return try writeInPlace(bytes, to: path)
            }
            let target = String(cString: resolved)
            free(resolved)
            try replace(target, with: bytes, original: status)
        } else {
            var link = stat()
            // A link to a file not made yet: creating through it makes the file it names.
            guard lstat(path, &link) != 0 else { return try writeInPlace(bytes, to: path) }
            try replace(path, with: bytes, original: nil)
        }
    }

    private static func replace(_ target: String, with bytes: [UInt8], original: stat?) throws(WriteError) {
        let directory = URL(fileURLWithPath: target).deletingLastPathComponent().path
        let name = URL(fileURLWithPath: target).lastPathComponent
        let temporary = directory + "/." + name + ".engage-" + UUID().uuidString
        // A new file gets the umask's permissions, as any file a command makes; a replaced one
        // keeps its own.
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { return try writeInPlace(bytes, to: target) }
        if let original, fchown(descriptor, original.st_uid, original.st_gid) != 0 {
            close(descriptor)
            unlink(temporary)
            return try writeInPlace(bytes, to: target)
        }
        var isOpen = true
        do throws(WriteError) {
            if let original, fchmod(descriptor, original.st_mode & 0o7777) != 0 { throw failure("cannot keep its permissions") }
            try writeAll(bytes, to: descriptor)
            guard fsync(descriptor) == 0 else { throw failure("fsync failed") }
            isOpen = false
            guard close(descriptor) == 0 else { throw failure("close failed") }
        } catch {
            if isOpen { close(descriptor) }
            unlink(temporary)
            throw error
        }
        guard rename(temporary, target) == 0 else {
            let error = failure("rename failed")
            unlink(temporary)
            throw error
        }
        // The rename itself is durable once the directory is synced; a directory that cannot be
        // opened for it (no read permission) still holds the whole file, so that is not an error.
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    private static func writeInPlace(_ bytes: [UInt8], to path: String) throws(WriteError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw failure("cannot open") }
        defer { close(descriptor) }
        try writeAll(bytes, to: descriptor)
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) throws(WriteError) {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("write failed")
            }
            written += count
        }
    }

    private static func failure(_ what: String) -> WriteError {
        WriteError(description: "\(what): \(String(cString: strerror(errno)))")
    }
}
