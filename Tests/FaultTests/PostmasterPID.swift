import EmbeddedPostgres
import Foundation

extension EmbeddedPostgres {
    /// The running postmaster's process id, from the first line of its `postmaster.pid`: the root
    /// of the process tree a test freezes (`ProcessTreeFreeze`) or lets go on.
    func postmasterPID() throws -> Int32 {
        let pidFile = try String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)
        guard let pid = pidFile.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw FaultTestError("no postmaster pid in \(dataDirectory)/postmaster.pid")
        }
        return pid
    }
}
