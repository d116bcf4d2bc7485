import Foundation
import Runtime

/// A file a command writes its answer to, checked before the command does its work: a path that
/// cannot be written is a typing slip, refused as a usage error (64) then, not once the work is
/// done.
enum WritableFile {
    /// Opens the file for writing as the command will, without truncating it, and removes it
    /// again if the check made it: permission bits alone would pass anything for root (`/proc`),
    /// which is who runs engage in many containers. With `creatingDirectory`, a missing directory
    /// is made first (the demo's `.engage/`). A FIFO without a reader yet passes.
    static func check(_ file: String, option: String, _ arguments: ParsedArguments, creatingDirectory: Bool = false) throws {
        let directory = URL(fileURLWithPath: file).deletingLastPathComponent().path
        let files = FileManager.default
        if creatingDirectory { try? files.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        let existed = files.fileExists(atPath: file)
        let descriptor = open(file, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0o644)
        guard descriptor >= 0 || errno == ENXIO else {
            let reason = String(cString: strerror(errno))
            throw arguments.usageError(.invalidValue, "option '\(option)': cannot write '\(file)': \(reason)")
        }
        if descriptor >= 0 { close(descriptor) }
        if !existed { unlink(file) }
    }
}
