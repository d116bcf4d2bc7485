import Foundation
import Glibc

/// The CPU priority of this process, for work that should yield to a server on the same machine
/// (`engage log prune --nice`), and of another process that works for it (the prune's own
/// PostgreSQL backend).
///
/// Linux groups processes by session when `kernel.sched_autogroup_enabled` is 1 (autogroups,
/// `man 7 sched`): niceness then only weighs a thread against threads of its own session, while
/// sessions share the CPU equally. A local PostgreSQL runs in a session of its own (pg_ctl starts
/// it with setsid), so every backend, ingestion's and the prune's, competes in that one group:
/// only the prune's backend's own niceness ranks the database's side of the prune below
/// ingestion's, whatever this process's.
public enum ProcessPriority {
    /// Raises the niceness of every thread of this process to at least `niceness` (0-19; Linux
    /// keeps a niceness per thread, and threads made later inherit their creator's). Lowering a
    /// priority needs no privilege; returns false if some thread could not be changed.
    @discardableResult
    public static func lower(to niceness: Int32) -> Bool {
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task"))?.compactMap { id_t($0) } ?? []
        var changed = true
        for thread in threads.isEmpty ? [0] : threads {
            errno = 0
            let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread)
            if errno != 0 { changed = false; continue }
            if current >= niceness { continue }
            if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread, niceness) != 0 { changed = false }
        }
        return changed
    }

    /// This thread's niceness.
    public static var current: Int32 {
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    }

    /// What `lower(process:named:to:)` did.
    public enum Outcome: Sendable, Equatable {
        /// Its niceness is now `niceness` (it was lower).
        case lowered(from: Int32)
        /// It already ran at `niceness` or lower priority: left as it was.
        case alreadyLower(Int32)
        /// Another user's process, and this one may not change it (EPERM or EACCES: neither root
        /// nor the same user).
        case notPermitted
        /// No process of that id and name on this machine (a server elsewhere, in another pid
        /// namespace, or gone).
        case notFound
    }

    /// Raises the niceness of the single-threaded process `pid` to at least `niceness`, if it is
    /// on this machine and its command name is `name` (so that a process id another machine or
    /// namespace gave never changes an unrelated process here).
    public static func lower(process pid: Int32, named name: String, to niceness: Int32) -> Outcome {
        guard pid > 0, let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
              comm.trimmingCharacters(in: .newlines) == name else { return .notFound }
        errno = 0
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(pid))
        if errno != 0 { return errno == ESRCH ? .notFound : .notPermitted }
        if current >= niceness { return .alreadyLower(current) }
        if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(pid), niceness) != 0 {
            return errno == ESRCH ? .notFound : .notPermitted
        }
        return .lowered(from: current)
    }

    /// The niceness of process `pid`, nil if there is none.
    public static func niceness(of pid: Int32) -> Int32? {
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(pid))
        return errno == 0 ? value : nil
    }
}
