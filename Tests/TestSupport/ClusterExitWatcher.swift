import EmbeddedPostgres
import Foundation

/// A detached shell that stops test clusters (immediately) and deletes their directory once this
/// test process is gone, however it ends: a crashed or killed test run must not leave servers.
enum ClusterExitWatcher {
    static func watch(_ clusters: [EmbeddedPostgres], removing directory: String) {
        let stops = clusters.map { cluster in
            let stop = "\(cluster.binaryDirectory)/pg_ctl stop -D \(cluster.dataDirectory) -m immediate"
            return geteuid() == 0 ? "/usr/sbin/runuser -u postgres -- \(stop)" : stop
        }
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; "
            + stops.map { "\($0) >/dev/null 2>&1; " }.joined() + "rm -rf \(directory)"
        _ = try? ProcessRunner.spawnDetached(["/bin/sh", "-c", script])
    }
}
