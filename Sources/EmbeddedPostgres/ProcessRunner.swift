import Foundation

/// Runs a helper program to completion and captures what it printed.
struct ProcessRunner {
    struct Outcome {
        var status: Int32
        var output: String
    }

    /// Runs `arguments[0]` with the rest; as root, `asUser` switches user through runuser(1).
    static func run(_ arguments: [String], asUser user: String? = nil, environment: [String: String]? = nil) throws -> Outcome {
        var command = arguments
        if let user, geteuid() == 0 {
            command = ["/usr/sbin/runuser", "-u", user, "--"] + arguments
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        if let environment { process.environment = environment }
        // The server inherits nothing of ours: its output goes to its log file, not our pipes.
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }
}
