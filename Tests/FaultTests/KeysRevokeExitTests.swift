import Foundation
import Testing
import TestSupport

/// `engage keys revoke` of an id that is unknown or revoked already is a refusal found in the
/// database, not a usage error: exit 1 without a usage line (it was 64, which README keeps for
/// arguments refused before anything starts).
@Suite("engage keys revoke: an unknown key")
struct KeysRevokeExitTests {
    @Test(.timeLimit(.minutes(2)))
    func revokingAnUnknownKeyExitsOne() async throws {
        let workspace = try FaultWorkspace("keys-revoke")
        defer { workspace.remove() }
        let database = try await offPool { try TestPostgres.freshDatabase() }
        let onDatabase = ["--database", database.connectionString]
        let refused = try await CommandLineOptionsTests.engage(["keys", "revoke", "0badc0de"] + onDatabase, in: workspace)
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("no active key with id '0badc0de'"), "\(refused.output)")
        #expect(!refused.output.contains("usage:"), "\(refused.output)")
    }
}
