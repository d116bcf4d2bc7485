import EmbeddedPostgres
import Foundation
import Postgres
import TestSupport

/// Why a fault test could not set up or observe a process; the message carries its log's tail.
struct FaultTestError: Error, CustomStringConvertible {
    var description: String

    init(_ message: String, log: String? = nil) {
        guard let log else {
            description = message
            return
        }
        let tail = log.split(separator: "\n", omittingEmptySubsequences: false).suffix(25).joined(separator: "\n")
        description = message + "\n--- last lines of its output ---\n" + tail
    }
}

/// A directory of its own for one test's process logs and queues, removed at the end.
struct FaultWorkspace: Sendable {
    let path: String

    init(_ label: String) throws {
        path = "/tmp/engage-fault-\(getpid())-\(label)-\(UUID().uuidString.prefix(6).lowercased())"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// One `engage` command running as a process of its own against a test database, with nothing
/// of this process's environment but PATH and HOME (a stray ENGAGE_* variable would change it).
final class EngageProcess: Sendable {
    let name: String
    let child: ChildProcess

    init(_ arguments: [String], database: PostgresConfiguration, environment: [String: String] = [:],
         workspace: FaultWorkspace, name: String) throws {
        self.name = name
        var variables = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": workspace.path]
        variables.merge(environment) { $1 }
        let log = workspace.file("\(name)-\(UUID().uuidString.prefix(4).lowercased()).log")
        child = try ChildProcess([try BuiltProgram.path("engage")] + arguments + ["--database", database.connectionString],
                                 environment: variables, outputPath: log)
    }

    /// `engage serve` on a loopback port (0: a free one), once its `/readyz` answers 200, with the
    /// port it listens on. The scheduler is left to `engage scheduler` processes unless asked for.
    static func readyServer(port: Int = 0, database: PostgresConfiguration, projector: Bool = false, scheduler: Bool = false,
                            options: [String] = [], workspace: FaultWorkspace, name: String) async throws -> (process: EngageProcess, port: Int) {
        let process = try EngageProcess(["serve", "--listen", "127.0.0.1:\(port)", "--projector", projector ? "on" : "off",
                                         "--scheduler", scheduler ? "on" : "off", "--pool-size", "4"] + options,
                                        database: database, workspace: workspace, name: name)
        let port = try await process.listeningPort()
        try await process.waitUntilReady(port: port)
        return (process, port)
    }

    var log: String { child.output }
    var isRunning: Bool { child.isRunning }

    /// Kills it at once, as a crash would, and collects it.
    func kill() async throws {
        child.signal(SIGKILL)
        guard await child.waitForExit(timeout: .seconds(10)) != nil else { throw FaultTestError("\(name) survived SIGKILL") }
    }

    /// Asks it to stop (SIGTERM) and returns its exit status.
    func terminate(timeout: Duration = .seconds(30)) async throws -> Int32 {
        child.signal(SIGTERM)
        guard let status = await child.waitForExit(timeout: timeout) else {
            throw FaultTestError("\(name) did not stop within \(timeout) of SIGTERM", log: log)
        }
        return status
    }

    /// Waits for it to exit on its own (a crash failpoint, say).
    func exitStatus(within timeout: Duration) async throws -> Int32 {
        guard let status = await child.waitForExit(timeout: timeout) else {
            throw FaultTestError("\(name) still runs after \(timeout)", log: log)
        }
        return status
    }

    /// The port `engage serve` reports listening on.
    func listeningPort(timeout: Duration = .seconds(30)) async throws -> Int {
        try await poll(timeout: timeout, what: "its listening address") {
            guard let line = log.split(separator: "\n").first(where: { $0.contains("engage.listening") }),
                  let range = line.range(of: #"address=https?://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) else { return nil }
            return Int(line[range].split(separator: ":").last!)
        }
    }

    /// Waits until `/readyz` answers 200 on `port`.
    func waitUntilReady(port: Int, timeout: Duration = .seconds(30)) async throws {
        _ = try await poll(timeout: timeout, what: "/readyz to answer 200") { () -> Bool? in
            let status = try? await offPool { try RawHTTPClient(port: port, receiveTimeout: 2).request("GET", "/readyz").status }
            return status == 200 ? true : nil
        }
    }

    /// Polls `check` until it returns a value, failing when the process exits or time runs out.
    func poll<T>(timeout: Duration, what: String, _ check: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            if let value = try await check() { return value }
            if let status = child.exitStatus() {
                throw FaultTestError("\(name) exited with status \(status) while waiting for \(what)", log: log)
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw FaultTestError("\(name): no \(what) within \(timeout)", log: log)
    }

    /// The value of a metric without labels on `/metrics`, or nil.
    static func metric(_ name: String, port: Int) async throws -> Double? {
        let response = try await offPool { try RawHTTPClient(port: port, receiveTimeout: 5).request("GET", "/metrics") }
        for line in response.text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }
}
