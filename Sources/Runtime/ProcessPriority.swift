import Foundation
import Glibc

/// The CPU priority of this process, for work that should yield to a server on the same machine
/// (`engage log prune --nice`).
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
}
