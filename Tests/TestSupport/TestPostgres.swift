import EmbeddedPostgres
import EventStore
import Foundation
import Postgres
import Synchronization

/// The PostgreSQL server of a test process: `$ENGAGE_TEST_DATABASE_URL` when set, otherwise a
/// throwaway cluster in a temporary directory, started on first use and stopped (and deleted)
/// when the test process ends, even if it crashes. Each test gets a database of its own.
public enum TestPostgres {
    public struct Server: Sendable {
        /// The maintenance database; tests create their own databases through it.
        public var adminConfiguration: PostgresConfiguration
        /// Set when this process started the server (so tests may stop and restart it).
        public var embedded: EmbeddedPostgres?
    }

    private static let server: Result<Server, Error> = Result { try startServer() }
    private static let creation = Mutex<Int>(0)
    private static let template = Mutex<Bool>(false)

    public static func shared() throws -> Server { try server.get() }

    /// A fresh, empty database; migrated (from a template, quickly) unless told otherwise.
    public static func freshDatabase(migrated: Bool = true) throws -> PostgresConfiguration {
        let server = try shared()
        let name = "test_\(getpid())_\(UUID().uuidString.prefix(8).lowercased())"
        // CREATE DATABASE copies a template that nobody may be using: one creation at a time.
        try creation.withLock { _ in
            let admin = try Connection(configuration: server.adminConfiguration)
            defer { admin.close() }
            if migrated {
                try prepareTemplate(server: server, admin: admin)
                try admin.execute("CREATE DATABASE \(identifier: name) TEMPLATE engage_test_template")
            } else {
                try admin.execute("CREATE DATABASE \(identifier: name)")
            }
        }
        return server.adminConfiguration.withDatabase(name)
    }

    /// Waits until every transaction that held a transaction id on the server when called has
    /// ended. An incremental look folds the events below `pg_snapshot_xmin`, which is cluster-wide:
    /// while tests run in parallel, another test's open transaction in its own database keeps this
    /// test's newest events out of the look, which then lags a replay until that transaction ends.
    public static func waitForEarlierTransactions(_ pool: ConnectionPool) async throws {
        let mine: UInt64 = try await pool.withConnection { connection in
            try connection.query("SELECT pg_current_xact_id()")[0].decode(0)
        }
        try await pollUntil(every: .milliseconds(5)) {
            try await pool.withConnection { connection in
                try connection.query("SELECT pg_snapshot_xmin(pg_current_snapshot())")[0].decode(0, as: UInt64.self)
            } > mine
        }
    }

    /// Builds the migrated template once per server (once per test process for a shared server).
    private static func prepareTemplate(server: Server, admin: Connection) throws {
        try template.withLock { ready in
            if ready { return }
            let templateName = "engage_test_template"
            if try !admin.query("SELECT 1 FROM pg_database WHERE datname = \(templateName)").isEmpty {
                try admin.execute("DROP DATABASE \(identifier: templateName)")
            }
            try admin.execute("CREATE DATABASE \(identifier: templateName)")
            let connection = try Connection(configuration: server.adminConfiguration.withDatabase(templateName))
            defer { connection.close() }
            try Migrator.fromSQLDirectory().migrate(connection)
            ready = true
        }
    }

    private static func startServer() throws -> Server {
        if let url = ProcessInfo.processInfo.environment["ENGAGE_TEST_DATABASE_URL"], !url.isEmpty {
            return Server(adminConfiguration: PostgresConfiguration(connectionString: url), embedded: nil)
        }
        // Short path: the socket lives in the data directory and socket paths are limited.
        let directory = "/tmp/engage-test-\(getpid())"
        let cluster = try EmbeddedPostgres(options: .init(
            dataDirectory: directory,
            database: "postgres",
            // Tests need a server, not crash safety of the machine: skip the disk flushes.
            settings: ["fsync": "off", "full_page_writes": "off", "max_connections": "300"]))
        try cluster.start()
        watchForExit(of: cluster)
        return Server(adminConfiguration: cluster.configuration(database: "postgres"), embedded: cluster)
    }

    /// A detached shell that stops and deletes the cluster once this process is gone.
    private static func watchForExit(of cluster: EmbeddedPostgres) {
        ClusterExitWatcher.watch([cluster], removing: cluster.dataDirectory)
    }
}
