import EmbeddedPostgres
import EngageCore
import EventStore
import Foundation
import Postgres
import Testing
import TestSupport

/// An old primary fenced without a restart (`default_transaction_read_only` turned on and the
/// configuration reloaded, its sessions kept) while its standby is promoted: appends through a
/// URL naming both hosts (`target_session_attrs=read-write`) fail once on the kept session, then
/// go to the promoted server, instead of failing on that session until it breaks.
@Suite("An old primary that turns read-only", .serialized)
struct ReadOnlyPrimaryTests {
    @Test(.timeLimit(.minutes(3)))
    func appendsMoveToTheServerThatTakesWritesNow() async throws {
        let pair = try StreamingReplication(label: "ro")
        let (primaryDatabase, _) = try pair.freshDatabase()
        let onPrimary = try Connection(configuration: primaryDatabase)
        let name = try onPrimary.query("SELECT current_database()::text")[0].decode(0, as: String.self)
        onPrimary.close()
        let bothHosts = PostgresConfiguration(connectionString: [
            "host=\(pair.primary.socketDirectory),\(pair.replica.socketDirectory)",
            "port=\(pair.primary.options.port),\(pair.replica.options.port)",
            "user=\(EmbeddedPostgres.superuser) dbname=\(name) target_session_attrs=read-write",
        ].joined(separator: " "))
        let pool = ConnectionPool(configuration: bothHosts, size: 1)
        let store = EventStore(pool: pool)
        #expect(try await store.append(EventFactory.items(2, notificationPrefix: "before")).storedCount == 2)

        try pair.withReplica { _ = try $0.query("SELECT pg_promote()") }
        try pair.withPrimary { connection in
            try connection.execute("ALTER SYSTEM SET default_transaction_read_only = on")
            _ = try connection.query("SELECT pg_reload_conf()")
        }
        // The kept session is refused once it has read the reloaded setting, which reaches it a
        // moment after pg_reload_conf returns: until then its appends still go to the old primary
        // (the client is answered 503 at the refusal and sends again)...
        try await pollUntil(every: .milliseconds(20)) {
            do {
                _ = try await store.append(EventFactory.items(2, notificationPrefix: "fenced"))
                return false
            } catch let error as PostgresError where error.isReadOnlyServer {
                return true
            }
        }
        // ... and the next append is made on the promoted server.
        #expect(try await store.append(EventFactory.items(2, notificationPrefix: "after")).storedCount == 2)
        let promoted = try Connection(configuration: pair.replica.configuration(database: name))
        defer { promoted.close() }
        let stored = try promoted.query("SELECT count(*) FROM events WHERE notification_id LIKE 'after-%'")[0].decode(0, as: Int.self)
        #expect(stored == 2)
        await pool.close()
    }
}
