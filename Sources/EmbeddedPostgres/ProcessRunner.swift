import CProcess
import Foundation

/// Runs helper programs (initdb, pg_ctl, runuser) to completion and captures what they print.
/// Spawning goes through a small C wrapper: no descriptor of ours leaks into the server that
/// pg_ctl leaves running, and the child is reaped by its own pid.
public enum ProcessRunner {
    public struct Outcome: Sendable {
        public var status: Int32
        public var output: String
    }

    /// Runs `arguments[0]` (an absolute path) with the rest; as root, `asUser` switches user through runuser(1).
    public static func run(_ arguments: [String], asUser user: String? = nil) throws -> Outcome {
        let block = argumentBlock(command(arguments, asUser: user))
        var output = [CChar](repeating: 0, count: 64 * 1024)
        var length = 0
        var status: Int32 = 0
        let result = CProcess_run(block, block.count, &output, output.count, &length, &status)
        guard result == 0 else {
            throw EmbeddedPostgresError("could not run \(arguments[0]): \(String(cString: strerror(-result)))")
        }
        let text = String(decoding: output[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Outcome(status: status, output: text)
    }

    /// Starts a program in its own session and returns its pid without waiting for it.
    @discardableResult
    public static func spawnDetached(_ arguments: [String]) throws -> Int32 {
        let block = argumentBlock(arguments)
        let pid = CProcess_spawn_detached(block, block.count)
        guard pid > 0 else {
            throw EmbeddedPostgresError("could not start \(arguments[0]): \(String(cString: strerror(-pid)))")
        }
        return pid
    }

    /// Replaces this process with `arguments[0]`; returns only on failure.
    public static func exec(_ arguments: [String]) -> EmbeddedPostgresError {
        let block = argumentBlock(arguments)
        let result = CProcess_exec(block, block.count)
        return EmbeddedPostgresError("could not run \(arguments[0]): \(String(cString: strerror(-result)))")
    }

    static func command(_ arguments: [String], asUser user: String?) -> [String] {
        guard let user, geteuid() == 0 else { return arguments }
        return ["/usr/sbin/runuser", "-u", user, "--"] + arguments
    }

    static func argumentBlock(_ arguments: [String]) -> [CChar] {
        var block: [CChar] = []
        for argument in arguments {
            block += argument.utf8CString
        }
        return block
    }
}
