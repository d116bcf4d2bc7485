import Foundation
import Runtime

/// A file a command writes its answer to, checked before the command does its work: a path that
/// cannot be written is a typing slip, refused as a usage error (64) then, not once the work is
/// done.
enum WritableFile {
    /// Tries what the command will do, changing nothing: an existing file (or a link to one) is
    /// opened for writing without truncating it; a new one is made and removed (through a link,
    /// the file the link names). Permission bits alone would pass anything for root (`/proc`),
    /// who runs engage in many containers. With `creatingDirectory`, a missing directory is made
    /// first (the demo's `.engage/`). A FIFO without a reader yet passes.
    static func check(_ file: String, option: String, _ arguments: ParsedArguments, creatingDirectory: Bool = false) throws {
        guard !file.isEmpty else { throw arguments.usageError(.invalidValue, "option '\(option)': expected a file name") }
        let directory = URL(fileURLWithPath: file).deletingLastPathComponent().path
        let files = FileManager.default
        if creatingDirectory { try? files.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        try check(file, in: directory, option: option, arguments, links: 0)
    }

    private static func check(_ file: String, in directory: String, option: String, _ arguments: ParsedArguments, links: Int) throws {
        let files = FileManager.default
        // A link to a file not made yet: the file it names is the one that will be written.
        if !files.fileExists(atPath: file), links < 8, let target = try? files.destinationOfSymbolicLink(atPath: file) {
            let path = target.hasPrefix("/") ? target : directory + "/" + target
            return try check(path, in: URL(fileURLWithPath: path).deletingLastPathComponent().path, option: option, arguments,
                             links: links + 1)
        }
        if !files.fileExists(atPath: file) {
            // The name itself, made and removed: its directory may take files and still refuse
            // this name (longer than the file system allows, bytes it does not store).
            let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if descriptor >= 0 {
                close(descriptor)
                unlink(file)
                return
            }
            // Made meanwhile by someone else: checked as an existing file.
            guard errno == EEXIST else { return try refuse(file, option: option, arguments) }
        }
        let descriptor = open(file, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        let writable = descriptor >= 0 || errno == ENXIO
        if descriptor >= 0 { close(descriptor) }
        guard writable else { return try refuse(file, option: option, arguments) }
    }

    /// Refuses the file with the reason `errno` gives.
    private static func refuse(_ file: String, option: String, _ arguments: ParsedArguments) throws {
        let reason = String(cString: strerror(errno))
        throw arguments.usageError(.invalidValue, "option '\(option)': cannot write '\(file)': \(reason)")
    }
}
