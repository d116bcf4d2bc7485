import EngageAPI
import Foundation
import Postgres
import Testing
import TestSupport

/// A server that is not a standby but makes every transaction read-only (an old primary fenced
/// with `default_transaction_read_only`, a managed server out of disk) refuses every append with
/// 25006: `/readyz` said ready all the same, since everything it runs only reads. It now answers
/// 503 `database-read-only`, and ready again once the server takes writes.
@Suite("Readiness on a database that takes no writes")
struct ReadOnlyDatabaseReadinessTests {
    @Test(.timeLimit(.minutes(2)))
    func aServerThatTakesNoWritesIsNotReady() async throws {
        let server = try TestServer()
        let admin = try Connection(configuration: server.database)
        defer { admin.close() }
        let name = try admin.query("SELECT current_database()::text")[0].decode(0, as: String.self)
        #expect(try await server.request("GET", "/readyz").status == 200)
        let key = try await server.key(app: uniqueApp("fenced"))

        // New sessions of this database only (the test cluster is shared): its sessions are ended,
        // and engage's pool connects again.
        func endSessions() throws {
            _ = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name) AND pid <> pg_backend_pid()")
        }
        try admin.execute("ALTER DATABASE \(identifier: name) SET default_transaction_read_only = on")
        try endSessions()
        var slug = ""
        try await pollUntil(every: .milliseconds(50)) {
            let ready = try await server.request("GET", "/readyz")
            slug = ready.text
            return ready.status == 503 && ready.text.contains("database-read-only")
        }
        #expect(slug.contains("The database takes no writes"), "\(slug)")
        #expect(try await server.post(WireEvent.valid(1).array, key: key).status == 503)

        try admin.execute("ALTER DATABASE \(identifier: name) RESET default_transaction_read_only")
        try endSessions()
        try await pollUntil(every: .milliseconds(50)) { try await server.request("GET", "/readyz").status == 200 }
        await server.stop()
    }
}
