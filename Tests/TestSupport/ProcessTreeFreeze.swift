import Glibc

/// Stops a process and every process descended from it (SIGSTOP), as a machine that froze: call
/// `step()` until it reports the whole tree stopped.
///
/// Reading the tree from /proc takes a while (every process's stat is read after the listing),
/// and a process not stopped yet may fork meanwhile: its child is in no listing read before, so
/// it is never signalled and goes on running. (A PostgreSQL backend the postmaster forked for an
/// ingest committer's new connection then commits, and engage rightly acknowledges what it
/// commits.) Seeing every process of a listing stopped proves nothing about a child born after
/// that listing. So the tree counts as stopped only once every process signalled so far was seen
/// stopped (or exited) *before* a fresh listing, and that listing holds nobody new: a stopped
/// process forks nothing more, so no process of the tree can be missing from it.
///
/// It assumes what holds for PostgreSQL: only processes that stay alive fork (a child of one that
/// exits before it is seen stopped is re-parented out of the tree), each process has one thread,
/// and none forks with vfork (a parent waiting for a vfork child stopped before its exec never
/// stops).
public struct ProcessTreeFreeze {
    public let root: Int32
    /// Every process sent SIGSTOP so far.
    public private(set) var signalled: Set<Int32> = []

    public init(root: Int32) {
        precondition(root > 0, "kill(\(root), ...) would signal a process group")
        self.root = root
    }

    /// Stops the processes of the tree not signalled yet; true once the whole tree is stopped.
    public mutating func step() -> Bool {
        let signalledCannotRun = signalled.allSatisfy(Self.cannotRun)
        let newcomers = LocalSystem.processTree(of: root).filter { !signalled.contains($0) }
        for pid in newcomers {
            Glibc.kill(pid, SIGSTOP)
            signalled.insert(pid)
        }
        return newcomers.isEmpty && signalledCannotRun
    }

    /// Stopped (state T, or t when traced), or exited: a zombie (which a stopped parent cannot
    /// reap) or gone. A stat that cannot be read counts as gone only when the pid no longer exists.
    public static func cannotRun(_ pid: Int32) -> Bool {
        switch LocalSystem.state(of: pid) {
        case "T", "t", "Z", "X": true
        case nil: Glibc.kill(pid, 0) != 0 && errno == ESRCH
        default: false
        }
    }
}
