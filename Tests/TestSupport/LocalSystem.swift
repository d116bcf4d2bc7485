import Foundation
import Glibc

/// What tests need to know about this machine's processes and ports, read from /proc and the
/// socket API.
public enum LocalSystem {
    /// `pid` and every process descended from it.
    public static func processTree(of pid: Int32) -> [Int32] {
        withDescendants([pid], children: childrenByParent())
    }

    /// The processes `isMarked` accepts and every process descended from one, from one reading
    /// of /proc. A mark read from a process's environment needs the descendants: PostgreSQL's
    /// children write their titles over the memory that held the environment they inherited, so
    /// their /proc/PID/environ no longer shows it.
    public static func processes(markedBy isMarked: (Int32) -> Bool) -> [Int32] {
        let children = childrenByParent()
        return withDescendants(children.values.joined().filter(isMarked), children: children)
    }

    private static func childrenByParent() -> [Int32: [Int32]] {
        var children: [Int32: [Int32]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let child = Int32(entry), let parent = parentPID(of: child) else { continue }
            children[parent, default: []].append(child)
        }
        return children
    }

    private static func withDescendants(_ roots: [Int32], children: [Int32: [Int32]]) -> [Int32] {
        var seen = Set<Int32>(), tree: [Int32] = [], index = 0
        for root in roots where seen.insert(root).inserted { tree.append(root) }
        while index < tree.count {
            for child in children[tree[index]] ?? [] where seen.insert(child).inserted { tree.append(child) }
            index += 1
        }
        return tree
    }

    /// From /proc/PID/stat: "pid (comm) state ppid ...", where comm may hold spaces and parentheses.
    private static func stat(of pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    private static func parentPID(of pid: Int32) -> Int32? {
        stat(of: pid).flatMap { $0.count > 1 ? Int32($0[1]) : nil }
    }

    /// The program `pid` runs (/proc/PID/exe), whatever it calls itself.
    public static func executable(of pid: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
    }

    /// The one-letter state of /proc/PID/stat (R, S, D, T, Z...), nil once gone.
    public static func state(of pid: Int32) -> String? {
        stat(of: pid)?.first.map(String.init)
    }

    /// "PID STATE command line" for a failure message: which process, doing what (PostgreSQL
    /// backends show their role and state in their command line).
    public static func describe(_ pid: Int32) -> String {
        let commandLine = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))
            .map { $0.split(separator: "\0").joined(separator: " ") } ?? ""
        return "\(pid) \(state(of: pid) ?? "gone") \(commandLine.trimmingCharacters(in: .whitespaces))"
    }

    public static func isZombie(_ pid: Int32) -> Bool {
        stat(of: pid)?.first == "Z"
    }

    /// True while `pid` exists and has not exited (a zombie has exited).
    public static func isRunning(_ pid: Int32) -> Bool {
        guard let state = stat(of: pid)?.first else { return false }
        return state != "Z" && state != "X"
    }

    /// True when `pid` is stopped by a signal (state T), or gone.
    public static func isStopped(_ pid: Int32) -> Bool {
        guard let state = stat(of: pid)?.first else { return true }
        return state == "T"
    }

    /// Free TCP ports on the loopback interface (held together while chosen, so they differ).
    public static func freePorts(_ count: Int) throws -> [Int] {
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        return try (0..<count).map { _ in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw LocalSystemError("socket() failed: errno \(errno)") }
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
                }
            }
            guard bound else { throw LocalSystemError("could not find a free port: errno \(errno)") }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }
}

/// A system call that failed while looking for a free port.
public struct LocalSystemError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
