import Foundation
import Glibc

/// The processes that carry an entry in their environment (`mark`, such as `NAME=value`), and
/// every process descended from one: how a test finds what it started through programs that
/// detach, rename themselves and restart each other (`AutoFailoverFormation`). The descendants
/// count whatever their environment shows: PostgreSQL's children write their titles over the
/// memory that held the environment they inherited.
///
/// Killing them is two steps, in Swift while the test runs (`stopAll()`) and in `sh` once it is
/// gone (`stopScript`): SIGSTOP to all found, again until a search finds none new (a stopped
/// process forks no more, and its children stay its children), and only then SIGKILL. Killed at
/// once, a parent would leave a child it forked meanwhile to init, with no mark and no parent
/// found.
public struct MarkedProcesses: Sendable {
    public let mark: String

    public init(mark: String) {
        self.mark = mark
    }

    /// The running marked processes and their descendants, this process left out.
    public func running() -> [Int32] {
        let entry = Array(mark.utf8)
        return LocalSystem.processes { pid in
            pid != getpid()
                && ((FileHandle(forReadingAtPath: "/proc/\(pid)/environ")?.readDataToEndOfFile())
                    .map { $0.split(separator: 0).contains { Array($0) == entry } } ?? false)
        }.filter(LocalSystem.isRunning)
    }

    /// Stops every one (SIGSTOP) until a search finds none new; returns them, stopped.
    public func stopAll() -> [Int32] {
        var stopped = Set<Int32>(), order: [Int32] = []
        while true {
            let new = running().filter { !stopped.contains($0) }
            if new.isEmpty { return order }
            for pid in new { Glibc.kill(pid, SIGSTOP) }
            stopped.formUnion(new)
            order += new
        }
    }

    /// Stops, then kills, every one, in up to ten rounds until none is found.
    public func killAll() {
        for _ in 0..<10 {
            let stopped = stopAll()
            if stopped.isEmpty { return }
            for pid in stopped { Glibc.kill(pid, SIGKILL) }
            for _ in 0..<100 where stopped.contains(where: LocalSystem.isRunning) { usleep(10_000) }
        }
    }

    /// `sh` text that defines `stop_marked`, which does what `stopAll()` does and leaves the
    /// pids, space-separated, in `$stopped`. For a shell that outlives this process.
    public var stopScript: String {
        let quoted = "'" + mark.replacingOccurrences(of: "'", with: "'\\''") + "'"
        return """
            stop_marked() {
                stopped=" "
                while :; do
                    found=" "
                    for entry in /proc/[0-9]*; do
                        pid=${entry#/proc/}
                        [ "$pid" != "$$" ] && grep -qaxzF -- \(quoted) "$entry/environ" 2>/dev/null && found="$found$pid "
                    done
                    while :; do
                        more=""
                        for entry in /proc/[0-9]*; do
                            pid=${entry#/proc/}
                            case "$found" in *" $pid "*) continue ;; esac
                            { read -r stat < "$entry/stat"; } 2>/dev/null || continue
                            set -- ${stat##*) }
                            case "$found" in *" $2 "*) more="$more$pid " ;; esac
                        done
                        [ -z "$more" ] && break
                        found="$found$more"
                    done
                    new=""
                    for pid in $found; do case "$stopped" in *" $pid "*) ;; *) new="$new$pid " ;; esac; done
                    [ -z "$new" ] && break
                    kill -STOP $new 2>/dev/null
                    stopped="$stopped$new"
                done
                stopped=$(echo $stopped)
            }
            """
    }
}
