import Foundation
import Runtime

/// A file a command writes its answer to, checked before the command does its work: a path that
/// cannot be written is a typing slip, refused as a usage error (64) then, not once the work is
/// done.
enum WritableFile {
    /// Tries what the command will do, changing nothing: an existing file (or a link to one) is
    /// opened for writing without truncating it; for a new one a file of a name of its own is made
    /// in its directory and removed. Permission bits alone would pass anything for root (`/proc`),
    /// who runs engage in many containers. With `creatingDirectory`, a missing directory is made
    /// first (the demo's `.engage/`). A FIFO without a reader yet passes.
    static func check(_ file: String, option: String, _ arguments: ParsedArguments, creatingDirectory: Bool = false) throws {
        guard !file.isEmpty else { throw arguments.usageError(.invalidValue, "option '\(option)': expected a file name") }
        let directory = URL(fileURLWithPath: file).deletingLastPathComponent().path
        let files = FileManager.default
        if creatingDirectory { try? files.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        let writable: Bool
        if files.fileExists(atPath: file) {
            let descriptor = open(file, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            writable = descriptor >= 0 || errno == ENXIO
            if descriptor >= 0 { close(descriptor) }
        } else {
            let probe = directory + "/.engage-write-check-" + UUID().uuidString
            let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            writable = descriptor >= 0
            if descriptor >= 0 {
                close(descriptor)
                unlink(probe)
            }
        }
        guard writable else {
            let reason = String(cString: strerror(errno))
            throw arguments.usageError(.invalidValue, "option '\(option)': cannot write '\(file)': \(reason)")
        }
    }
}
