import EmbeddedPostgres
import Foundation
import Testing
import TestSupport

/// The local PostgreSQL of another user (root's, whose server runs as postgres in a data
/// directory only postgres can read), seen by a user who cannot read it: `engage db status` said
/// "no local PostgreSQL yet" and `engage db stop` stopped nothing and said so too. Both now say
/// whose it is and fail.
@Suite("Local PostgreSQL: another user's cluster")
struct OtherUsersClusterTests {
    /// Acting as another user (`nobody`) takes root, as CI runs the suite; a developer running it
    /// as themselves (README's second command) cannot, and this test alone does not run then.
    @Test(.timeLimit(.minutes(2)), .enabled(if: geteuid() == 0, "acting as another user takes root"))
    func anotherUsersClusterIsNamedNotMistakenForNone() async throws {
        let workspace = try FaultWorkspace("other-user")
        defer { workspace.remove() }
        let dataDirectory = workspace.file("pg")
        let cluster = try EmbeddedPostgres(options: EmbeddedPostgres.Options(dataDirectory: dataDirectory, database: "other",
                                                                             settings: ["fsync": "off"]))
        try cluster.start()
        defer { try? cluster.stop(mode: "immediate") }
        // A copy of engage that `nobody` can run wherever the checkout is (under /root, say).
        let program = workspace.file("engage")
        try FileManager.default.copyItem(atPath: try BuiltProgram.path("engage"), toPath: program)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: workspace.path)

        for command in ["status", "stop"] {
            let outcome = try ProcessRunner.run(["/usr/sbin/runuser", "-u", "nobody", "--", program, "db", command, "--data-dir", dataDirectory])
            #expect(outcome.status == 1, "db \(command): \(outcome.output)")
            #expect(outcome.output.contains("error: the local PostgreSQL in \(dataDirectory) belongs to another user"),
                    "db \(command): \(outcome.output)")
        }
        #expect(try cluster.status() == .running)
    }
}
