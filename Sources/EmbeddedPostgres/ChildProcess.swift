import CProcess
import Foundation
import Synchronization

/// A program this process starts and collects itself (fault tests start `engage` this way):
/// its output is appended to a file, it gets exactly the environment given, and it is killed
/// when this object goes away while it still runs, or when this process dies.
public final class ChildProcess: Sendable {
    public let pid: Int32
    public let outputPath: String
    /// The exit status once collected (the exit code, or 128 + the signal). While it is nil the
    /// pid cannot have been reused, so signalling under this lock reaches the right process.
    private let collected = Mutex<Int32?>(nil)

    public init(_ arguments: [String], environment: [String: String], outputPath: String) throws {
        let argv = ProcessRunner.argumentBlock(arguments)
        let env = ProcessRunner.argumentBlock(environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        let pid = CProcess_spawn(argv, argv.count, env, env.count, outputPath)
        guard pid > 0 else {
            throw EmbeddedPostgresError("could not start \(arguments[0]): \(String(cString: strerror(-pid)))")
        }
        self.pid = pid
        self.outputPath = outputPath
        // A spawned child has no parent-death signal: a detached watcher kills it if this
        // process dies first (a crashed test must not leave servers running), and leaves as
        // soon as the child is gone.
        let watcher = "while kill -0 \(getpid()) 2>/dev/null; do kill -0 \(pid) 2>/dev/null || exit 0; sleep 1; done; kill -9 \(pid) 2>/dev/null"
        _ = try? ProcessRunner.spawnDetached(["/bin/sh", "-c", watcher])
    }

    deinit {
        collected.withLock { status in
            guard status == nil else { return }
            kill(pid, SIGKILL)
            var code: Int32 = 0
            _ = CProcess_wait(pid, 1, &code)
        }
    }

    /// The exit status once the program has ended, nil while it runs.
    public func exitStatus() -> Int32? {
        collected.withLock { status in
            if status == nil {
                var code: Int32 = 0
                if CProcess_wait(pid, 0, &code) == 1 { status = code }
            }
            return status
        }
    }

    public var isRunning: Bool { exitStatus() == nil }

    /// Sends a signal (SIGKILL, SIGTERM...) unless the program has already been collected.
    public func signal(_ number: Int32) {
        collected.withLock { status in
            if status == nil { _ = kill(pid, number) }
        }
    }

    /// Waits up to `timeout` for the program to end; returns its exit status, or nil if it still runs.
    public func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline && !Task.isCancelled {
            if let status = exitStatus() { return status }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return exitStatus()
    }

    /// Everything it wrote so far (standard output and error).
    public var output: String {
        (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }
}
